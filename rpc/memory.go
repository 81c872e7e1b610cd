package rpc

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Big inputs turn into garbage in one go: a message of tens of megabytes
// once it is handled, a model answer of tens of megabytes once the turn
// has stored it, an over-long ACP line once it is refused. The Go runtime
// keeps the heap it grew for them and gives it back only slowly (its goal
// stays at twice what was live at the last collection), so the process
// would hold several times the input for minutes. After such work, and
// only then, the server collects and hands the free memory back at once.

// largeMessage is the size of a message past which its handling is
// followed by a release.
const largeMessage = 8 << 20

// largeAllocation is how much an async request (a prompt's turn) may
// allocate before its end is followed by a release.
const largeAllocation = 64 << 20

// releaseDelay lets a burst of big messages (a file opened, then changed)
// end before the release, and the handler's last references go.
const releaseDelay = 500 * time.Millisecond

// releaser runs release once, releaseDelay after the last call of soon.
type releaser struct {
	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
	// release is release by default; tests count calls.
	release func()
}

func (r *releaser) soon() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	if r.timer != nil {
		r.timer.Reset(releaseDelay)
		return
	}
	r.timer = time.AfterFunc(releaseDelay, func() {
		r.mu.Lock()
		r.timer = nil
		f := r.release
		r.mu.Unlock()
		if f == nil {
			f = release
		}
		f()
	})
}

// stop cancels a pending release; later calls of soon do nothing.
func (r *releaser) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}

// release collects twice, since what sync.Pool holds (encoding/json keeps
// its last encoding buffer, as big as the biggest message encoded) lives
// through one collection, then returns the free memory to the system.
func release() {
	runtime.GC()
	debug.FreeOSMemory()
}

// allocated is the number of bytes the process has allocated so far.
func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
