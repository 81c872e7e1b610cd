//go:build linux

package launch

import (
	"os"
	"runtime"
	"sync"
	"syscall"
	"unsafe"
)

// Kernel numbers the syscall package does not have on every
// architecture.
const (
	sysLandlockCreateRuleset = 444
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446

	prSetDumpable       = 4
	prCapbsetDrop       = 24
	prSetChildSubreaper = 36
	prSetNoNewPrivs     = 38
	prCapAmbient        = 47
	prCapAmbientClear   = 4

	seccompSetModeFilter = 1
	seccompSpecAllow     = 4
	seccompNewListener   = 8

	landlockRulePathBeneath = 1

	oPath = 0x200000

	// The rights that apply to a file rather than a folder: execute,
	// write, read, truncate, ioctl on a device.
	fileRights = 1 | 2 | 4 | 1<<14 | 1<<15
)

// exitCode is the status the supervisor exits with when it cannot start
// or confine the command (as a shell does for a command it cannot run).
const exitCode = 126

// State is what the first stage hands to the second: set when this
// process is a supervisor whose command it started.
type State struct {
	// Pid is the command's process.
	Pid int
	// Listener is the guard's notification descriptor (-1: none);
	// Ruleset the Landlock ruleset the guard confines its workers with
	// (-1: none).
	Listener, Ruleset int

	mu       sync.Mutex
	status   *os.File
	finished bool
	mainDone bool
	holding  bool
	exit     func(syscall.WaitStatus)

	// q holds the notifications left to the guard; devices are those
	// this stage opens itself (notify_linux.go).
	q       queue
	devices []string
}

// MainDone reports whether the command itself has ended (what it started
// may still run).
func (st *State) MainDone() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mainDone
}

var started *State

// Started returns the first stage's state, nil when this process is not
// a supervisor that started its command.
func Started() *State { return started }

func init() {
	if len(os.Args) < 4 || os.Args[1] != Arg || os.Args[2] != "--" {
		close(ready)
		return
	}
	if v, _ := syscall.Getenv(EnvWarm); v == "1" {
		// The rest of the binary initialises while the command is on
		// its way.
		go waitWarm()
		return
	}
	defer close(ready)
	text, ok := syscall.Getenv(EnvPlan)
	if !ok {
		return
	}
	p, ok := Decode(text)
	if !ok {
		fail("the plan is not readable")
	}
	st, err := start(p)
	if err != "" {
		fail(err)
	}
	if p.ProbeOnly {
		os.Exit(0)
	}
	started = st
	go st.reap()
}

func fail(msg string) {
	os.Stderr.WriteString("qwen-ls sandbox: " + msg + "\n")
	os.Exit(exitCode)
}

// start confines a thread of its own with the plan and starts the
// command from it. The thread is never given back to the runtime, so no
// other code of the supervisor runs confined, and it stays, parked, for
// the supervisor's life: the command's parent-death signal fires when the
// thread that started it ends.
func start(p Plan) (*State, string) {
	type result struct {
		st  *State
		err string
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		st, err := confine(p)
		if err != "" || p.ProbeOnly {
			ch <- result{err: err}
			return
		}
		if st.Listener >= 0 {
			// The notifications are received from before the command
			// starts: its first call (a shell's open of /dev/tty) then
			// finds the receiver waiting.
			st.q.cond = sync.NewCond(&st.q.mu)
			st.devices = p.Devices
			go st.serve()
		}
		env := environ(p)
		attr := &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2},
			Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
		pid, e := syscall.ForkExec(p.Path, p.Args, attr)
		if e != nil {
			ch <- result{err: "cannot run " + p.Path + ": " + e.Error()}
			return
		}
		st.Pid = pid
		ch <- result{st: st}
		select {}
	}()
	r := <-ch
	return r.st, r.err
}

// confine applies the plan to the calling thread (and, for the mounts,
// the process).
func confine(p Plan) (*State, string) {
	st := &State{Listener: -1, Ruleset: -1}
	for _, fd := range p.CloseOnExec {
		syscall.CloseOnExec(fd)
	}
	if p.StatusFD > 0 {
		syscall.CloseOnExec(p.StatusFD)
		st.status = os.NewFile(uintptr(p.StatusFD), "status")
	}
	// Orphans of the command come back to the supervisor.
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return nil, "child subreaper: " + e.Error()
	}
	if p.Mounts {
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
			return nil, "make the mount namespace private: " + err.Error()
		}
		for _, b := range p.Binds {
			if err := bind(b); err != "" {
				return nil, err
			}
		}
		if p.Proc {
			if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
				return nil, "mount /proc: " + err.Error()
			}
		}
	}
	if p.ClearAmbient {
		_, _, _ = syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClear, 0, 0, 0, 0)
	}
	if p.DropBounding {
		for c := uintptr(0); c < 64; c++ {
			if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prCapbsetDrop, c, 0); e == syscall.EINVAL {
				break
			}
		}
	}
	if p.Undumpable {
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
	}
	if p.Landlock != nil || len(p.Filter) > 0 {
		if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); e != 0 {
			return nil, "no_new_privs: " + e.Error()
		}
	}
	if r := p.Landlock; r != nil {
		fd, err := ruleset(r)
		if err == "" {
			if _, _, e := syscall.RawSyscall(sysLandlockRestrictSelf, uintptr(fd), 0, 0); e != 0 {
				err = "landlock: restrict: " + e.Error()
			}
		}
		switch {
		case err != "" && !p.Optional:
			return nil, err
		case err == "" && p.Listener:
			// The guard confines its workers with the same rules.
			st.Ruleset = fd
		case err == "":
			syscall.Close(fd)
		}
	}
	if len(p.Filter) > 0 {
		fd, err := filter(p.Filter, p.Listener)
		if err != "" {
			return nil, err
		}
		st.Listener = fd
	}
	return st, ""
}

// bind makes an existing path a bind mount of itself; read-only, it can
// neither be written nor renamed over nor removed (EBUSY).
func bind(b Bind) string {
	var fi syscall.Stat_t
	if syscall.Stat(b.Path, &fi) != nil {
		return ""
	}
	if err := syscall.Mount(b.Path, b.Path, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return "bind " + b.Path + ": " + err.Error()
	}
	if !b.ReadOnly {
		return ""
	}
	flags := uintptr(syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_RDONLY)
	// A remount in a user namespace must keep the locked flags of the
	// mount it copies.
	var sf syscall.Statfs_t
	if syscall.Statfs(b.Path, &sf) == nil {
		for _, f := range []uintptr{syscall.MS_NOSUID, syscall.MS_NODEV, syscall.MS_NOEXEC, syscall.MS_NOATIME, syscall.MS_NODIRATIME, syscall.MS_RELATIME} {
			if uintptr(sf.Flags)&f != 0 {
				flags |= f
			}
		}
	}
	if err := syscall.Mount("", b.Path, "", flags, ""); err != nil {
		return "make " + b.Path + " read-only: " + err.Error()
	}
	return ""
}

// ruleset creates the Landlock ruleset of r and adds its rules.
func ruleset(r *Ruleset) (int, string) {
	attr := [3]uint64{r.HandledFS, r.HandledNet, r.Scoped}
	size := uintptr(8)
	switch {
	case r.Scoped != 0:
		size = 24
	case r.HandledNet != 0:
		size = 16
	}
	fd, _, e := syscall.RawSyscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(&attr[0])), size, 0)
	if e != 0 {
		return -1, "landlock: create the ruleset: " + e.Error()
	}
	for _, rule := range r.Rules {
		pfd, err := syscall.Open(rule.Path, oPath|syscall.O_CLOEXEC, 0)
		if err != nil {
			// A path that does not exist grants nothing.
			continue
		}
		access := rule.Access
		var fi syscall.Stat_t
		if syscall.Fstat(pfd, &fi) == nil && fi.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			access &= fileRights
		}
		if access == 0 {
			syscall.Close(pfd)
			continue
		}
		// struct landlock_path_beneath_attr is packed: a u64 and an s32.
		var beneath [12]byte
		*(*uint64)(unsafe.Pointer(&beneath[0])) = access
		*(*int32)(unsafe.Pointer(&beneath[8])) = int32(pfd)
		_, _, e := syscall.RawSyscall6(sysLandlockAddRule, fd, landlockRulePathBeneath, uintptr(unsafe.Pointer(&beneath[0])), 0, 0, 0)
		syscall.Close(pfd)
		if e != 0 {
			syscall.Close(int(fd))
			return -1, "landlock: add the rule for " + rule.Path + ": " + e.Error()
		}
	}
	return int(fd), ""
}

// filter installs the system call filter on the calling thread, and
// returns the listener when it notifies (-1 otherwise). SPEC_ALLOW: the
// filter does not also turn on the mitigation of speculative store
// bypass, which costs a third of a millisecond at start and slows the
// whole command; it protects a process's secrets from code it runs
// itself, which is not what this sandbox is for.
func filter(prog []Instruction, listener bool) (int, string) {
	fprog := struct {
		len    uint16
		filter *Instruction
	}{uint16(len(prog)), &prog[0]}
	flags := uintptr(seccompSpecAllow)
	if listener {
		flags |= seccompNewListener
	}
	r, _, e := syscall.RawSyscall(sysSeccomp, seccompSetModeFilter, flags, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return -1, "seccomp: " + e.Error()
	}
	if !listener {
		return -1, ""
	}
	return int(r), ""
}

// environ is the command's environment: the plan's, or the supervisor's
// own, with the plan's changes.
func environ(p Plan) []string {
	base := p.Env
	if base == nil {
		base = os.Environ()
	}
	var env []string
	for _, kv := range base {
		drop := false
		for _, name := range p.Unset {
			if len(kv) > len(name) && kv[:len(name)] == name && kv[len(name)] == '=' {
				drop = true
				break
			}
		}
		for _, set := range p.Set {
			name := set
			if i := indexByte(set, '='); i >= 0 {
				name = set[:i]
			}
			if len(kv) > len(name) && kv[:len(name)] == name && kv[len(name)] == '=' {
				drop = true
				break
			}
		}
		if !drop {
			env = append(env, kv)
		}
	}
	return append(env, p.Set...)
}

// reap waits for every child (orphans that come back to the subreaper
// included). When the command ends it reports its status, or, with no
// status pipe, exits as the command did; once no child is left it exits
// as the command did.
func (st *State) reap() {
	var main syscall.WaitStatus
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			st.mu.Lock()
			holding := st.holding
			st.mu.Unlock()
			if !holding {
				st.exitLike(main)
			}
			return
		}
		if pid != st.Pid {
			continue
		}
		main = ws
		st.mu.Lock()
		st.mainDone = true
		if st.holding {
			st.mu.Unlock()
			continue
		}
		if st.status == nil {
			st.mu.Unlock()
			st.exitLike(ws)
			return
		}
		st.finishLocked(ws)
		st.mu.Unlock()
	}
}

// finishLocked writes the status line ("exit N" or "signal N"), which
// ends the report, and closes the pipe.
func (st *State) finishLocked(ws syscall.WaitStatus) {
	if st.finished || st.status == nil {
		return
	}
	st.finished = true
	var b []byte
	if ws.Signaled() {
		b = append(b, "signal "...)
		b = utoa(b, uint64(ws.Signal()))
	} else {
		b = append(b, "exit "...)
		b = utoa(b, uint64(ws.ExitStatus()))
	}
	b = append(b, '\n')
	_, _ = st.status.Write(b)
	_ = st.status.Close()
}

// Report writes a line to the status pipe before the status, if the
// command still runs; it reports whether it was written.
func (st *State) Report(line string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.status == nil || st.finished {
		return false
	}
	_, err := st.status.WriteString(line + "\n")
	return err == nil
}

// Hold keeps the reaper from ending the supervisor: the second stage
// is killing what the command started (the server died) and exits itself.
func (st *State) Hold() {
	st.mu.Lock()
	st.holding = true
	st.mu.Unlock()
}

// Attach hands the end of the supervisor to exit, which the second stage
// gives once its signal handlers are installed (a death by a signal is
// passed on by sending the signal to the supervisor itself, which needs
// the handler reset first).
func (st *State) Attach(exit func(syscall.WaitStatus)) {
	st.mu.Lock()
	st.exit = exit
	st.mu.Unlock()
}

func (st *State) exitLike(ws syscall.WaitStatus) {
	st.mu.Lock()
	exit := st.exit
	st.mu.Unlock()
	if exit != nil {
		exit(ws)
		return
	}
	if ws.Signaled() {
		KillSelf(ws.Signal())
		os.Exit(128 + int(ws.Signal()))
	}
	os.Exit(ws.ExitStatus())
}

// KillSelf sends sig to the calling thread, which takes it before the
// call returns: sent to the process, it could reach another thread after
// the caller had already exited with a status instead.
func KillSelf(sig syscall.Signal) {
	runtime.LockOSThread()
	_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), sig)
}
