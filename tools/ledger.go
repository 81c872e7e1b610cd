package tools

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// ledgerCap is how many files a ledger remembers (tools.md §2.9).
const ledgerCap = 4096

// ledgerEntry is what a session knows about its last look at one file.
type ledgerEntry struct {
	// Source is where the text came from; Version, ModTime and Size
	// identify that state cheaply.
	Source  workspace.Source
	Version int32
	ModTime time.Time
	Size    int64
	// Hash is the SHA-256 of the whole text as seen.
	Hash [32]byte
	// Full is a read without offset or limit that was not truncated (and
	// every write).
	Full bool
	// Editable is false for binary, media, PDF and notebook content.
	Editable bool
	// Kind names the content for the "not editable" message
	// (binary, image, audio, video, PDF, notebook); "" for text.
	Kind string
	// ByReadFile marks an entry made by a full read_file result, for the
	// unchanged-read shortcut; HistoryEpoch is the session's history
	// epoch at that time (a compaction bumps it).
	ByReadFile   bool
	HistoryEpoch int
}

// Ledger is the per-session record of reads and writes, keyed by real
// path, least recently used evicted. It is safe for concurrent use, since
// read-only calls run in parallel.
type Ledger struct {
	mu      sync.Mutex
	entries map[string]*list.Element
	order   *list.List // front = most recent
	// epoch is the history epoch: bumped when history is compacted.
	epoch int
}

type ledgerItem struct {
	key   string
	entry ledgerEntry
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{entries: map[string]*list.Element{}, order: list.New()}
}

// hashText is the ledger's hash of a text.
func hashText(s string) [32]byte { return HashStrings(s) }

// HashStrings is the SHA-256 of the concatenation of parts, computed
// through a small buffer: a conversion to []byte would copy each part
// whole, megabytes for a large file or tool call.
func HashStrings(parts ...string) [32]byte {
	h := sha256.New()
	var buf [16 << 10]byte
	for _, s := range parts {
		for len(s) > 0 {
			n := copy(buf[:], s)
			h.Write(buf[:n])
			s = s[n:]
		}
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// record stores e for path (any path; it is keyed by its real path).
func (l *Ledger) record(path string, e ledgerEntry) {
	if l == nil {
		return
	}
	key := workspace.RealPath(path)
	l.mu.Lock()
	defer l.mu.Unlock()
	e.HistoryEpoch = l.epoch
	if el, ok := l.entries[key]; ok {
		el.Value.(*ledgerItem).entry = e
		l.order.MoveToFront(el)
		return
	}
	l.entries[key] = l.order.PushFront(&ledgerItem{key: key, entry: e})
	for l.order.Len() > ledgerCap {
		last := l.order.Back()
		l.order.Remove(last)
		delete(l.entries, last.Value.(*ledgerItem).key)
	}
}

// lookup returns the entry for path.
func (l *Ledger) lookup(path string) (ledgerEntry, bool) {
	if l == nil {
		return ledgerEntry{}, false
	}
	key := workspace.RealPath(path)
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.entries[key]
	if !ok {
		return ledgerEntry{}, false
	}
	l.order.MoveToFront(el)
	return el.Value.(*ledgerItem).entry, true
}

// currentEpoch is the current history epoch.
func (l *Ledger) currentEpoch() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch
}

// HistoryCompacted bumps the epoch: earlier full reads are no longer in the
// history the model sees, so the unchanged-read shortcut must not refer
// to them.
func (l *Ledger) HistoryCompacted() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.epoch++
	l.mu.Unlock()
}

// entryFor builds the ledger entry for a snapshot.
func entryFor(s *workspace.Snapshot, full, editable bool, kind string) ledgerEntry {
	return ledgerEntry{Source: s.Source, Version: s.Version, ModTime: s.ModTime, Size: s.Size,
		Hash: hashText(s.Text), Full: full, Editable: editable, Kind: kind}
}
