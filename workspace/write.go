package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// WriteFileAtomic replaces the file at path with data so that a reader sees
// either the old content or the new, never a mix (tools.md §2.5). The data
// goes to a temp file in the target's directory, is synced, and is renamed
// over the target.
//
// An existing file keeps its permission bits (perm is used only for a new
// file, subject to the umask). When path is a symlink, the file it points
// at is written and the link stays a link. Missing parent directories are
// created with mode 0755. On any failure the temp file is removed and the
// target is left as it was.
//
// WriteFileAtomic does not check workspace membership; callers resolve the
// path with Roots.Resolve first.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeFileAtomicIn(path, data, perm, nil)
}

// writeFileAtomicIn is WriteFileAtomic that checks, once the temp file is
// created, that its real folder (see OpenedPath) passes allowed, and
// otherwise removes it and returns ErrEscaped: a parent folder swapped
// for a symlink after the path was checked cannot redirect the write.
func writeFileAtomicIn(path string, data []byte, perm os.FileMode, allowed func(real string) bool) error {
	target, err := writeTarget(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: create parent directories: %w", path, err)
	}

	keepMode := false
	mode := perm.Perm()
	if fi, err := os.Stat(target); err == nil {
		keepMode = true
		mode = fi.Mode().Perm()
	}

	tmp, f, err := createTemp(dir, filepath.Base(target), mode)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// From here on every failure removes the temp file.
	fail := func(step string, err error) error {
		_ = f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %s: %w", path, step, err)
	}
	if err := CheckOpened(f, allowed); err != nil {
		// The name may lead elsewhere by now: remove the file that was
		// really created.
		if real, ok := OpenedPath(f.Fd()); ok {
			_ = os.Remove(real)
		}
		return fail("check the folder", err)
	}
	// OpenFile applied the umask; an existing file's mode is kept exactly.
	if keepMode {
		if err := f.Chmod(mode); err != nil {
			return fail("keep mode", err)
		}
	}
	if _, err := f.Write(data); err != nil {
		return fail("write temp file", err)
	}
	if err := f.Sync(); err != nil {
		return fail("sync temp file", err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: close temp file: %w", path, err)
	}
	beforeRename(tmp, target)
	if err := replaceFile(tmp, target); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	// Syncing the directory makes the rename itself durable. Some file
	// systems refuse to sync a directory; the data is already safe then.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	sweepStaleTemps(dir)
	return nil
}

// tempPrefix marks qwen-ls's temp files, so that a file index or a person
// can tell a leftover from a crash for what it is. A temp file is named
// tempPrefix + the target's name (cut to 100 bytes) + "." + its owner +
// "." + a random base-36 number. The owner is the writing process's pid
// and start time, in base 36 ("<pid>-<start>"), so that a leftover whose
// writer is gone can be told from a write in progress by any process.
// Servers before the owner was recorded left the owner part out.
const tempPrefix = ".qwen-tmp-"

// IsTempName reports whether a file name has the shape of WriteFileAtomic's
// temp files. A process killed between writing the temp file and renaming
// it leaves one behind; isStaleTemp says when one can go.
func IsTempName(name string) bool {
	rest, ok := strings.CutPrefix(name, tempPrefix)
	if !ok {
		return false
	}
	i := strings.LastIndexByte(rest, '.')
	return i >= 0 && isBase36(rest[i+1:], 13)
}

// isBase36 reports whether s is 1 to max lower-case base-36 digits.
func isBase36(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// tempOwner parses the owner part of a temp file's name; ok is false for a
// name without one.
func tempOwner(name string) (pid int, start uint64, ok bool) {
	if !IsTempName(name) {
		return 0, 0, false
	}
	rest := name[:strings.LastIndexByte(name, '.')]
	i := strings.LastIndexByte(rest, '.')
	if i <= len(tempPrefix) { // no owner part, or no target name before it
		return 0, 0, false
	}
	p, s, found := strings.Cut(rest[i+1:], "-")
	if !found || !isBase36(p, 13) || !isBase36(s, 13) {
		return 0, 0, false
	}
	pid64, err1 := strconv.ParseInt(p, 36, 32)
	start, err2 := strconv.ParseUint(s, 36, 64)
	if err1 != nil || err2 != nil || pid64 <= 0 {
		return 0, 0, false
	}
	return int(pid64), start, true
}

// self is this process as temp file names record it.
var self = sync.OnceValue(func() string {
	start, _ := procStart(os.Getpid())
	return strconv.FormatInt(int64(os.Getpid()), 36) + "-" + strconv.FormatUint(start, 36)
})

// processStart is when this process began, for leftovers without an owner.
var processStart = time.Now()

// staleTempMargin is how much older than a server a temp file without an
// owner must be to count as a leftover: file times are coarser than the
// clock, so a younger one may be a write in progress.
const staleTempMargin = time.Second

// isStaleTemp reports whether the temp file name (IsTempName), last
// modified at mtime, is a leftover that no live process can still rename:
// its owner is neither this process nor any other running one. A name
// without an owner (written by an older server) is a leftover when it is
// older than since, the start of the server that asks, by more than
// staleTempMargin.
func isStaleTemp(name string, mtime, since time.Time) bool {
	pid, start, ok := tempOwner(name)
	if !ok {
		return IsTempName(name) && mtime.Before(since.Add(-staleTempMargin))
	}
	if strconv.FormatInt(int64(pid), 36)+"-"+strconv.FormatUint(start, 36) == self() {
		return false // a write of this process, in progress
	}
	return !ownerAlive(pid, start)
}

// sweepEvery bounds how often a write sweeps its folder for leftovers.
const sweepEvery = time.Minute

var sweeps struct {
	sync.Mutex
	last map[string]time.Time
}

// sweepStaleTemps removes from dir the temp files that isStaleTemp calls
// leftovers, at most once per sweepEvery per folder, so that a write cut
// by a kill does not leave its temp file until a server restarts. Only
// regular files are removed, never a symlink or a folder of that name.
func sweepStaleTemps(dir string) {
	now := time.Now()
	sweeps.Lock()
	if t, ok := sweeps.last[dir]; ok && now.Sub(t) < sweepEvery {
		sweeps.Unlock()
		return
	}
	if sweeps.last == nil || len(sweeps.last) > 4096 {
		sweeps.last = map[string]time.Time{}
	}
	sweeps.last[dir] = now
	sweeps.Unlock()

	d, err := os.Open(dir)
	if err != nil {
		return
	}
	defer d.Close()
	for {
		names, err := d.Readdirnames(1024)
		for _, n := range names {
			if !strings.HasPrefix(n, tempPrefix) || !IsTempName(n) {
				continue
			}
			p := filepath.Join(dir, n)
			fi, err := os.Lstat(p)
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			if isStaleTemp(n, fi.ModTime(), processStart) {
				_ = os.Remove(p)
			}
		}
		if err != nil {
			return
		}
	}
}

// createTemp creates a new, empty temp file next to the target. The name
// starts with a dot so it stays out of most listings while it exists.
func createTemp(dir, base string, mode os.FileMode) (string, *os.File, error) {
	// Keep the name well under NAME_MAX (255) whatever the target's name.
	if len(base) > 100 {
		base = base[:100]
	}
	for range 100 {
		name := filepath.Join(dir, tempPrefix+base+"."+self()+"."+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err == nil {
			return name, f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", nil, fmt.Errorf("create temp file: %w", err)
		}
	}
	return "", nil, errors.New("create temp file: no free name")
}

// writeTarget follows a chain of symlinks at path to the file a write should
// replace. A dangling link yields the path it points at, so the write
// creates the file there, as writing through the link would.
func writeTarget(path string) (string, error) {
	p := filepath.Clean(path)
	for range maxSymlinks {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		t, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(t) {
			// A relative target counts from the directory the link
			// really lives in, which may itself be reached by a link.
			dir, err := filepath.EvalSymlinks(filepath.Dir(p))
			if err != nil {
				return "", err
			}
			t = filepath.Join(dir, t)
		}
		p = filepath.Clean(t)
	}
	return "", errors.New("too many levels of symbolic links")
}

// Byte order marks, as strings so they cannot be modified.
const (
	BOMUTF8    = "\xEF\xBB\xBF"
	bomUTF16LE = "\xFF\xFE"
	bomUTF16BE = "\xFE\xFF"
	bomUTF32LE = "\xFF\xFE\x00\x00"
	bomUTF32BE = "\x00\x00\xFE\xFF"
)

// TextFormat is what a file's bytes say beyond its text: the byte order mark
// (which also names the encoding: UTF-8, UTF-16LE/BE or UTF-32LE/BE; none
// means UTF-8) and whether its line endings are CRLF. Reading a file with
// DecodeText and writing it back with WriteText keeps both. The zero value
// is a new file's format: UTF-8, no BOM, LF.
type TextFormat struct {
	BOM  []byte
	CRLF bool
	// Legacy names the non-Unicode charset the text was decoded from
	// (one of the Charset* constants of encoding.go) when the file had no
	// BOM and was not UTF-8; EncodeText then writes that charset again.
	// Empty means UTF-8 or the encoding the BOM selects.
	Legacy string
}

// Charset names the encoding the BOM selects: "utf-8", "utf-16le",
// "utf-16be", "utf-32le" or "utf-32be"; or, for a file without BOM that
// was not UTF-8, the legacy charset it was decoded from (Legacy).
func (f TextFormat) Charset() string {
	if f.Legacy != "" && len(f.BOM) == 0 {
		return f.Legacy
	}
	switch string(f.BOM) {
	case bomUTF16LE:
		return "utf-16le"
	case bomUTF16BE:
		return "utf-16be"
	case bomUTF32LE:
		return "utf-32le"
	case bomUTF32BE:
		return "utf-32be"
	}
	return "utf-8"
}

// detectBOM returns the BOM data starts with, or "". UTF-32LE is tried
// before UTF-16LE because its BOM begins with the UTF-16LE one.
func detectBOM(data []byte) string {
	for _, bom := range []string{bomUTF32LE, bomUTF32BE, BOMUTF8, bomUTF16LE, bomUTF16BE} {
		if bytes.HasPrefix(data, []byte(bom)) {
			return bom
		}
	}
	return ""
}

// DetectFormat reports the BOM and line-ending style of a file's bytes. A
// text is CRLF when it contains at least one "\r\n" (tools.md §2.5).
func DetectFormat(data []byte) TextFormat {
	_, f := DecodeText(data)
	return f
}

// DecodeText turns a file's bytes into text. A UTF-8 BOM is stripped; UTF-16
// and UTF-32 with a BOM are decoded to UTF-8 (an incomplete trailing unit or
// an invalid code point becomes U+FFFD). Nothing else is changed: line
// endings stay as they are, and bytes without a BOM are returned as they
// are, valid UTF-8 or not.
func DecodeText(data []byte) (text string, f TextFormat) {
	bom := detectBOM(data)
	if bom != "" {
		f.BOM = []byte(bom)
	}
	body := data[len(bom):]
	switch bom {
	case bomUTF16LE, bomUTF16BE:
		text = decodeUTF16(body, bom == bomUTF16BE)
	case bomUTF32LE, bomUTF32BE:
		text = decodeUTF32(body, bom == bomUTF32BE)
	default:
		text = string(body)
	}
	f.CRLF = strings.Contains(text, "\r\n")
	return text, f
}

func decodeUTF16(b []byte, bigEndian bool) string {
	units := make([]uint16, len(b)/2)
	for i := range units {
		lo, hi := b[2*i], b[2*i+1]
		if bigEndian {
			lo, hi = hi, lo
		}
		units[i] = uint16(lo) | uint16(hi)<<8
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for _, r := range utf16.Decode(units) {
		sb.WriteRune(r)
	}
	if len(b)%2 != 0 {
		sb.WriteRune(utf8.RuneError)
	}
	return sb.String()
}

func decodeUTF32(b []byte, bigEndian bool) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for i := 0; i+4 <= len(b); i += 4 {
		var u uint32
		if bigEndian {
			u = uint32(b[i])<<24 | uint32(b[i+1])<<16 | uint32(b[i+2])<<8 | uint32(b[i+3])
		} else {
			u = uint32(b[i]) | uint32(b[i+1])<<8 | uint32(b[i+2])<<16 | uint32(b[i+3])<<24
		}
		r := rune(u)
		if u > utf8.MaxRune || !utf8.ValidRune(r) {
			r = utf8.RuneError
		}
		sb.WriteRune(r)
	}
	if len(b)%4 != 0 {
		sb.WriteRune(utf8.RuneError)
	}
	return sb.String()
}

// EncodeText is the inverse of DecodeText and DecodeFileText: the bytes
// WriteText would write for text in format f. With f.CRLF every line ending becomes "\r\n", so a
// text with mixed endings, or one edited with "\n", comes out pure CRLF; a
// lone "\r" is not a line ending and is kept. Without f.CRLF the text is
// written as given.
func EncodeText(text string, f TextFormat) []byte {
	if f.CRLF {
		text = toCRLF(text)
	}
	out := make([]byte, 0, len(f.BOM)+len(text))
	out = append(out, f.BOM...)
	switch f.Charset() {
	case "utf-16le", "utf-16be":
		be := f.Charset() == "utf-16be"
		for _, u := range utf16.Encode([]rune(text)) {
			if be {
				out = append(out, byte(u>>8), byte(u))
			} else {
				out = append(out, byte(u), byte(u>>8))
			}
		}
	case "utf-32le", "utf-32be":
		be := f.Charset() == "utf-32be"
		for _, r := range text {
			u := uint32(r)
			if be {
				out = append(out, byte(u>>24), byte(u>>16), byte(u>>8), byte(u))
			} else {
				out = append(out, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
			}
		}
	case "utf-8":
		out = append(out, text...)
	default:
		// A legacy charset: a character it cannot represent is written
		// as '?'.
		out = append(out, encodeLegacyLossy(text, f.Charset())...)
	}
	return out
}

// toCRLF writes every "\n" not already preceded by "\r" as "\r\n".
func toCRLF(s string) string {
	n := strings.Count(s, "\n") - strings.Count(s, "\r\n")
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + n)
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && (i == 0 || s[i-1] != '\r') {
			b.WriteByte('\r')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// WriteText writes text to path in format f (its BOM, encoding and line
// endings; see EncodeText) with WriteFileAtomic. A new file gets mode 0644
// before the umask; an existing one keeps its mode.
func WriteText(path, text string, f TextFormat) error {
	return WriteFileAtomic(path, EncodeText(text, f), 0o644)
}

// WriteTextIn is WriteText with writeFileAtomicIn's check.
func WriteTextIn(path, text string, f TextFormat, allowed func(real string) bool) error {
	return writeFileAtomicIn(path, EncodeText(text, f), 0o644, allowed)
}
