package tools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/qwen-ls/qwen-ls/tools/procgroup"
	"github.com/qwen-ls/qwen-ls/tools/sandbox"
)

// start launches `bash -c command` (on Windows the shell pickShell
// chooses) under the sandbox supervisor with the policy pol, in its own
// process group (led by the supervisor; on Windows a job), with the output
// pipes read by two goroutines.
func (s *Shell) start(command, dir string, background bool, sessionID string, pol sandbox.Policy) (*shellRun, error) {
	cmd, err := pickShell(runtime.GOOS, os.Getenv).command(command)
	if err != nil {
		return nil, err
	}
	spill := s.env.threshold()
	if spill <= 0 || spill > shellSpoolMax {
		spill = shellSpoolMax
	}
	run := &shellRun{
		attached: true,
		waitDone: make(chan struct{}),
		readDone: make(chan struct{}),
		stopTick: make(chan struct{}),
		tickDone: make(chan struct{}),
	}
	for i := range run.streams {
		run.streams[i] = &shellStream{store: &spool{limit: spill}}
	}
	if background {
		dir := filepath.Join(s.env.ProjectTempDir(), "background", sessionDirName(sessionID))
		f, err := createUniqueFile(dir, "shell_", ".output")
		if err != nil {
			return nil, fmt.Errorf("create the background output file: %w", err)
		}
		run.bgFile = f
		run.bgPath = f.Name()
	}
	var readers, writers [2]*os.File
	for i := range readers {
		readers[i], writers[i], err = os.Pipe()
		if err != nil {
			closeFiles(readers[:], writers[:])
			run.closeBackgroundFile(true)
			return nil, err
		}
	}
	cmd.Dir = dir
	cmd.Env = append(ChildEnv(s.env.Settings()), "QWEN_CODE=1", "PAGER=cat", "GIT_PAGER=cat", "TERM=dumb")
	cmd.Stdout, cmd.Stderr = writers[0], writers[1]
	procgroup.Prepare(cmd)
	pol.Linger = true
	sup, err := sandbox.Wrap(cmd, pol)
	if err == nil {
		err = sup.Start()
	}
	if err != nil {
		closeFiles(readers[:], writers[:])
		run.closeBackgroundFile(true)
		return nil, err
	}
	if err := procgroup.Adopt(cmd.Process.Pid); err != nil {
		// Without its job the command could not be stopped with what it
		// starts: stop it now.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		closeFiles(readers[:], writers[:])
		run.closeBackgroundFile(true)
		return nil, err
	}
	if runtime.GOOS == "windows" {
		cp := consoleCodePage()
		run.decoders = [2]*outputDecoder{newOutputDecoder(cp), newOutputDecoder(cp)}
	}
	closeFiles(nil, writers[:])
	run.cmd, run.pgid, run.pipes, run.policy, run.dir = cmd, cmd.Process.Pid, readers, sup.Policy, dir
	s.env.Processes.Track(run.pgid, sessionID)
	go func() {
		run.status = sup.WaitMain()
		run.denials = sup.Denials()
		close(run.waitDone)
	}()
	var wg sync.WaitGroup
	for i, r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run.read(i, r)
		}()
	}
	go func() {
		wg.Wait()
		run.closeBackgroundFile(false)
		close(run.readDone)
	}()
	return run, nil
}

func sessionDirName(id string) string {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) {
		return "default"
	}
	return id
}

func closeFiles(lists ...[]*os.File) {
	for _, l := range lists {
		for _, f := range l {
			if f != nil {
				_ = f.Close()
			}
		}
	}
}

// forgetWhenDone drops a background group from the registry once bash has
// exited, if nothing else of the group is left then.
func (s *Shell) forgetWhenDone(run *shellRun) {
	go func() {
		<-run.waitDone
		if len(run.leftovers()) == 0 {
			s.env.Processes.Forget(run.pgid)
		}
	}()
}

// leftovers lists the processes of the command's group other than the
// supervisor, which stays while they run.
func (r *shellRun) leftovers() []int {
	members, _ := procgroup.Members(r.pgid)
	return slices.DeleteFunc(members, func(p int) bool { return p == r.pgid })
}

// shellRun is one running command: its process, the goroutines that read
// its two pipes, and what has been kept of the output.
type shellRun struct {
	cmd   *exec.Cmd
	pgid  int
	pipes [2]*os.File
	// decoders turn each pipe's output into UTF-8 (Windows; nil
	// elsewhere); each is used by its pipe's reader alone.
	decoders [2]*outputDecoder
	// status is how bash ended, set before waitDone is closed.
	status sandbox.Status
	// policy is the sandbox the command ran in, dir the folder it ran
	// in; denials are what the sandbox refused it, set with status.
	policy  sandbox.Policy
	dir     string
	denials []sandbox.Denial
	// waitDone is closed when bash has exited; readDone when both pipes
	// are at their end (or were given up); tickDone when the live-output
	// goroutine has stopped after stopTick was closed.
	waitDone, readDone, stopTick, tickDone chan struct{}
	stopOnce                               sync.Once
	bgPath                                 string

	// mu guards what the reader goroutines write.
	mu sync.Mutex
	// attached is true while the call still collects the output; a
	// background command goes on writing to bgFile once it is false.
	attached bool
	streams  [2]*shellStream // stdout, stderr
	live     liveView
	dirty    bool
	bgFile   *os.File
}

// read copies one pipe until its end or until the drain gives up on it.
func (r *shellRun) read(i int, f *os.File) {
	defer f.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		chunk := r.decoders[i].decode(buf[:n])
		if err != nil {
			chunk = append(chunk, r.decoders[i].flush()...)
		}
		if len(chunk) > 0 {
			r.mu.Lock()
			if r.bgFile != nil {
				// A failed write to the background file loses output
				// nobody waits for; there is no one to tell.
				_, _ = r.bgFile.Write(chunk)
			}
			if r.attached {
				r.streams[i].write(chunk, &r.live)
				r.dirty = true
			}
			r.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// startTicker sends the live output at most every shellCoalesce.
func (r *shellRun) startTicker(onOutput func(Output)) {
	if onOutput == nil {
		close(r.tickDone)
		return
	}
	go func() {
		defer close(r.tickDone)
		t := time.NewTicker(shellCoalesce)
		defer t.Stop()
		for {
			select {
			case <-r.stopTick:
				return
			case <-t.C:
			}
			r.mu.Lock()
			if !r.dirty || !r.attached {
				r.mu.Unlock()
				continue
			}
			r.dirty = false
			text := r.live.render()
			r.mu.Unlock()
			onOutput(Output{Text: text})
		}
	}()
}

// stopTicker stops the live output and waits until no update is in flight,
// so that none arrives after Execute returns.
func (r *shellRun) stopTicker() {
	r.stopOnce.Do(func() { close(r.stopTick) })
	<-r.tickDone
}

// drain, after bash has exited, waits up to shellDrain for the pipes to
// reach their end, then stops collecting. A foreground command's pipes
// are then closed (processes left in the group do not hold the call); a
// background command's keep feeding its output file.
func (r *shellRun) drain() {
	t := time.NewTimer(shellDrain)
	defer t.Stop()
	select {
	case <-r.readDone:
	case <-t.C:
	}
	r.detach()
	r.mu.Lock()
	background := r.bgFile != nil
	r.mu.Unlock()
	if !background {
		for _, p := range r.pipes {
			_ = p.SetReadDeadline(time.Now())
		}
		<-r.readDone
	}
}

// detach stops collecting output for the call and stops the live updates.
func (r *shellRun) detach() {
	r.mu.Lock()
	r.attached = false
	r.mu.Unlock()
	r.stopTicker()
}

// release frees what the streams hold (temporary files).
func (r *shellRun) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.streams {
		st.release()
	}
}

// closeBackgroundFile closes the background output file (removing it when
// the command never started).
func (r *shellRun) closeBackgroundFile(remove bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bgFile == nil {
		return
	}
	_ = r.bgFile.Close()
	if remove {
		_ = os.Remove(r.bgFile.Name())
	}
	r.bgFile = nil
}

// displayOutput is the returnDisplay text: stdout then stderr, the end of
// it when it is long.
func (r *shellRun) displayOutput() string {
	var texts []string
	var total int64
	for _, st := range r.streams {
		t, size := st.displayText()
		if t != "" {
			texts = append(texts, t)
		}
		total += size
	}
	text := strings.Join(texts, "\n")
	if len(texts) == 2 {
		total++
	}
	if len(text) <= shellLiveLimit && total <= shellLiveLimit {
		return text
	}
	cut := runeStart(text, len(text)-min(len(text), shellLiveLimit))
	return omittedLine(total-int64(len(text)-cut)) + text[cut:]
}
