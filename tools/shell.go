package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

//go:embed shell.md
var shellDescription string

const shellSchema = `{
  "type": "object",
  "properties": {
    "command": {
      "type": "string",
      "description": "The bash command to run, exactly as it would be typed in a terminal."
    },
    "description": {
      "type": "string",
      "description": "A short explanation of what the command does, shown to the user."
    },
    "directory": {
      "type": "string",
      "description": "Directory to run the command in: relative to the first workspace root, or absolute inside a workspace root. Defaults to the first workspace root."
    },
    "is_background": {
      "type": "boolean",
      "description": "Run the command in the background (for servers and watchers that do not exit). Default false."
    },
    "timeout": {
      "type": "number",
      "description": "Timeout in milliseconds for a foreground command (default 120000, at most 600000)."
    }
  },
  "required": ["command"]
}`

// The limits of tools.md §3.8.
const (
	shellDefaultTimeout = 120000
	shellMaxTimeout     = 600000
	// shellLiveLimit is how much of the end of the output a live update
	// (and the final display) shows.
	shellLiveLimit = 64 << 10
	// shellSniffLimit is how far into a stream a NUL byte marks it binary.
	shellSniffLimit = 4096
	shellCoalesce   = 100 * time.Millisecond
	// shellDrain is how long the output pipes may still be read once bash
	// has exited (processes left in the group may hold them open).
	shellDrain          = 200 * time.Millisecond
	shellBackgroundWait = 1000 * time.Millisecond
	// shellSpoolMax caps the processed output a stream keeps in memory
	// before it moves to a temporary file.
	shellSpoolMax = 1 << 20
	// shellNoteMax is how many unsaved files the note names.
	shellNoteMax = 20
)

// Shell is the run_shell_command tool (tools.md §3.8).
type Shell struct {
	Base
	env *Env
}

// NewShell returns the run_shell_command tool working in env. It gives
// env a ProcessGroups registry when it has none, so that the server can
// kill what the commands leave running (env.Processes.KillAll) on exit.
func NewShell(env *Env) *Shell {
	if env.Processes == nil {
		env.Processes = &ProcessGroups{}
	}
	return &Shell{env: env, Base: Base{Spec: Spec{
		Name:          "run_shell_command",
		DisplayName:   "Shell",
		Description:   shellDescription,
		Schema:        []byte(shellSchema),
		Kind:          KindExecute,
		StreamsOutput: true,
	}}}
}

// Validate applies the checks of tools.md §3.8 in their order.
func (s *Shell) Validate(params map[string]any) *ToolError {
	cmd, _ := String(params, "command")
	if strings.TrimSpace(cmd) == "" {
		return InvalidParams(`Argument "command" must not be empty.`)
	}
	a, err := ParseShellCommand(cmd)
	if err != nil {
		return InvalidParams(fmt.Sprintf("Could not parse the command: %s. Check the quoting and try again.", err))
	}
	if !a.HasRoot() {
		return InvalidParams("The command runs no program (it only sets variables), so there is nothing to approve or run.")
	}
	if bg, _ := Bool(params, "is_background"); bg && a.TrailingBackground {
		return InvalidParams(`With is_background true, do not end the command with "&": remove the trailing "&", and the command still runs in the background.`)
	}
	if _, given := params["timeout"]; given {
		ms, ok := Int(params, "timeout")
		switch {
		case !ok:
			return InvalidParams(`Argument "timeout" must be a whole number of milliseconds.`)
		case ms <= 0:
			return InvalidParams(`Argument "timeout" must be more than 0.`)
		case ms > shellMaxTimeout:
			return InvalidParams(`Argument "timeout" can be at most 600000 (10 minutes).`)
		}
	}
	_, terr := s.directory(params)
	return terr
}

// directory resolves the directory argument (tools.md §3.8 step 6).
func (s *Shell) directory(params map[string]any) (string, *ToolError) {
	primary := s.env.Workspace.Roots.Primary()
	raw, _ := String(params, "directory")
	p := CleanPathArg(raw)
	if p == "" {
		if primary == "" {
			return "", InvalidParams("No workspace folder is open, so there is no directory to run the command in.")
		}
		return primary, nil
	}
	if !filepath.IsAbs(p) {
		if primary == "" {
			return "", InvalidParams("No workspace folder is open, so a relative directory cannot be resolved.")
		}
		p = filepath.Join(primary, p)
	}
	if _, _, err := s.env.Workspace.Roots.Resolve(p); err != nil {
		return "", NewError(ErrorPathNotInWorkspace, fmt.Sprintf("Directory %s is outside the workspace.", p))
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", InvalidParams(fmt.Sprintf("Directory %s does not exist.", p))
	case err != nil:
		return "", InvalidParams(fmt.Sprintf("Could not use directory %s: %v", p, err))
	case !fi.IsDir():
		return "", InvalidParams(fmt.Sprintf("%s is not a directory.", p))
	}
	return p, nil
}

// Describe is `<command> [in <directory>] (<description>)`.
func (s *Shell) Describe(params map[string]any) string {
	cmd, _ := String(params, "command")
	out := cmd
	if dir, _ := String(params, "directory"); strings.TrimSpace(dir) != "" {
		out += " [in " + strings.TrimSpace(dir) + "]"
	}
	if desc, _ := String(params, "description"); strings.TrimSpace(desc) != "" {
		desc = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(strings.TrimSpace(desc))
		out += " (" + desc + ")"
	}
	return out
}

// ShouldConfirm asks for nothing when every sub-command is read-only and
// there is no command substitution; else exec details listing the
// sub-commands that are not read-only.
func (s *Shell) ShouldConfirm(_ context.Context, _ *Call, params map[string]any) (*Confirmation, *ToolError) {
	cmd, _ := String(params, "command")
	a, err := ParseShellCommand(cmd)
	if err != nil {
		return nil, InvalidParams(fmt.Sprintf("Could not parse the command: %s. Check the quoting and try again.", err))
	}
	if a.ReadOnly() {
		return nil, nil
	}
	return ShellConfirmation(cmd, a.NeedingApproval()), nil
}

// AllowedInPlanMode lets plan mode run a command whose sub-commands are all
// read-only, without command substitution (tools.md §6.4).
func (s *Shell) AllowedInPlanMode(params map[string]any) bool {
	cmd, _ := String(params, "command")
	a, err := ParseShellCommand(cmd)
	return err == nil && a.ReadOnly()
}

// Execute runs the command (tools.md §3.8). A non-zero exit and a timeout
// are normal results; a failure to start is shell_execute_error; a
// cancelled ctx kills the process group and returns ctx.Err().
func (s *Shell) Execute(ctx context.Context, call *Call, params map[string]any, onOutput func(Output)) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	command, _ := String(params, "command")
	dir, terr := s.directory(params)
	if terr != nil {
		return ErrorResult(ErrorShellExecute, terr.Message), nil
	}
	dirLabel := strings.TrimSpace(stringParam(params, "directory"))
	if dirLabel == "" {
		dirLabel = "(root)"
	}
	background, _ := Bool(params, "is_background")
	timeout := shellDefaultTimeout
	if ms, ok := Int(params, "timeout"); ok {
		timeout = ms
	}
	sessionID := ""
	if call != nil {
		sessionID = call.SessionID
	}
	note := s.unsavedNote()

	run, err := s.start(command, dir, background, sessionID)
	if err != nil {
		return ErrorResult(ErrorShellExecute, err.Error()), nil
	}
	run.startTicker(onOutput)

	if background {
		wait := time.NewTimer(shellBackgroundWait)
		defer wait.Stop()
		select {
		case <-run.waitDone:
		case <-ctx.Done():
			// Background groups ignore turn cancellation; only the call
			// ends.
			run.detach()
			run.release()
			s.forgetWhenDone(run)
			return Result{}, ctx.Err()
		case <-wait.C:
			run.detach()
			run.release()
			s.forgetWhenDone(run)
			return s.stillRunning(run, command, dirLabel), nil
		}
		run.drain()
		return s.finish(run, command, dirLabel, note, false, timeout), nil
	}

	limit := time.NewTimer(time.Duration(timeout) * time.Millisecond)
	defer limit.Stop()
	timedOut := false
	select {
	case <-run.waitDone:
	case <-ctx.Done():
		TerminateGroup(run.pgid)
		<-run.waitDone
		run.drain()
		run.release()
		if members, _ := GroupMembers(run.pgid); len(members) == 0 {
			s.env.Processes.Forget(run.pgid)
		}
		return Result{}, ctx.Err()
	case <-limit.C:
		timedOut = true
		TerminateGroup(run.pgid)
		<-run.waitDone
	}
	run.drain()
	return s.finish(run, command, dirLabel, note, timedOut, timeout), nil
}

func stringParam(params map[string]any, name string) string {
	v, _ := String(params, name)
	return v
}

// start launches `bash -c command` in its own process group with the
// output pipes read by two goroutines.
func (s *Shell) start(command, dir string, background bool, sessionID string) (*shellRun, error) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		return nil, err
	}
	spill := s.env.Threshold()
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
	cmd := exec.Command(bash, "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "QWEN_CODE=1", "PAGER=cat", "GIT_PAGER=cat", "TERM=dumb")
	cmd.Stdout, cmd.Stderr = writers[0], writers[1]
	SetProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		closeFiles(readers[:], writers[:])
		run.closeBackgroundFile(true)
		return nil, err
	}
	closeFiles(nil, writers[:])
	run.cmd, run.pgid, run.pipes = cmd, cmd.Process.Pid, readers
	s.env.Processes.Track(run.pgid, sessionID)
	go func() {
		run.waitErr = cmd.Wait()
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

// stillRunning is the answer for a background command that has not exited
// within shellBackgroundWait.
func (s *Shell) stillRunning(run *shellRun, command, dirLabel string) Result {
	pgid := strconv.Itoa(run.pgid)
	text := "Command: " + command + "\n" +
		"Directory: " + dirLabel + "\n" +
		"Background PIDs: " + pgid + "\n" +
		"Process Group PGID: " + pgid + "\n" +
		"Output File: " + run.bgPath + "\n" +
		"The command is still running in the background. Read the output file with read_file; stop it with `kill -- -" + pgid + "`."
	display := fmt.Sprintf("Running in the background (process group %d); output: %s", run.pgid, run.bgPath)
	return TextResult(text, Markdown(display))
}

// forgetWhenDone drops a background group from the registry once bash has
// exited, if nothing else of the group is left then.
func (s *Shell) forgetWhenDone(run *shellRun) {
	go func() {
		<-run.waitDone
		if members, _ := GroupMembers(run.pgid); len(members) == 0 {
			s.env.Processes.Forget(run.pgid)
		}
	}()
}

// finish builds the result of a command that has exited.
func (s *Shell) finish(run *shellRun, command, dirLabel, note string, timedOut bool, timeout int) Result {
	defer run.release()
	leftovers, _ := GroupMembers(run.pgid)
	if len(leftovers) == 0 {
		s.env.Processes.Forget(run.pgid)
	}
	exitCode, signal := "(none)", "(none)"
	var errs []string
	if timedOut {
		errs = append(errs, fmt.Sprintf("the command ran past its %d ms timeout and was stopped.", timeout))
	}
	var exit int
	if st := run.cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			signal = unix.SignalName(ws.Signal())
			if signal == "" {
				signal = ws.Signal().String()
			}
		} else {
			exit = st.ExitCode()
			exitCode = strconv.Itoa(exit)
		}
	}
	var exitErr *exec.ExitError
	if run.waitErr != nil && !errors.As(run.waitErr, &exitErr) {
		errs = append(errs, run.waitErr.Error())
	}
	for _, st := range run.streams {
		if st.store != nil && st.store.err != nil {
			errs = append(errs, "part of the output could not be kept: "+st.store.err.Error())
			break
		}
	}
	errLine := "(none)"
	if len(errs) > 0 {
		errLine = strings.Join(errs, "; ")
	}
	pids := "(none)"
	if len(leftovers) > 0 {
		strs := make([]string, len(leftovers))
		for i, p := range leftovers {
			strs[i] = strconv.Itoa(p)
		}
		pids = strings.Join(strs, ", ")
	}
	parts := shellTextParts{
		head: "Command: " + command + "\nDirectory: " + dirLabel + "\nStdout: ",
		mid:  "\nStderr: ",
		tail: "\nError: " + errLine +
			"\nExit Code: " + exitCode +
			"\nSignal: " + signal +
			"\nBackground PIDs: " + pids +
			"\nProcess Group PGID: " + strconv.Itoa(run.pgid),
	}
	if note != "" {
		parts.tail += "\n" + note
	}
	for _, st := range run.streams {
		st.finish()
	}
	tr := s.composeText(run, parts)

	display := run.displayOutput()
	if display == "" {
		switch {
		case timedOut:
			display = fmt.Sprintf("Command timed out after %dms.", timeout)
		case signal != "(none)":
			display = "Command terminated by signal: " + signal
		case exitCode != "(none)" && exit != 0:
			display = "Command exited with code: " + exitCode
		}
	}
	if n := tr.DisplayNote(); n != "" {
		if display != "" {
			display += "\n\n"
		}
		display += n
	}
	var d Display
	if display != "" {
		d = Markdown(display)
	}
	return TextResult(tr.Text, d)
}

// shellTextParts are the fixed pieces of the llmContent around the two
// streams.
type shellTextParts struct {
	head, mid, tail string
}

// composeText builds the llmContent and applies tools.md §2.8 to it. While
// both streams are in memory the text is built as a string; once one was
// spooled to disk it is written straight to the saved-output file and
// only its start and end are read back.
func (s *Shell) composeText(run *shellRun, p shellTextParts) TruncatedOutput {
	out, errs := run.streams[0], run.streams[1]
	if !out.spilled() && !errs.spilled() {
		text := p.head + out.inMemoryText() + p.mid + errs.inMemoryText() + p.tail
		return s.env.TruncateToolOutput(s.Name(), text)
	}
	f, saveErr := CreateOutputFile(s.env.ProjectTempDir(), s.Name())
	keep := saveErr == nil
	if !keep {
		var err error
		if f, err = os.CreateTemp("", "qwen-shell-*.output"); err != nil {
			return TruncatedOutput{
				Text: p.head + "[the output could not be kept: " + err.Error() + "]" + p.mid + p.tail,
			}
		}
	}
	err := writeAll(f, p.head, out, p.mid, errs, p.tail)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		var tr TruncatedOutput
		tr, err = truncateFile(f.Name(), keep, saveErr, s.env.OutputLimits())
		if err == nil {
			return tr
		}
	}
	_ = os.Remove(f.Name())
	return TruncatedOutput{Text: p.head + "[the output could not be kept: " + err.Error() + "]" + p.mid + p.tail}
}

func writeAll(f *os.File, head string, out *shellStream, mid string, errs *shellStream, tail string) error {
	if _, err := f.WriteString(head); err != nil {
		return err
	}
	if err := out.writeText(f); err != nil {
		return err
	}
	if _, err := f.WriteString(mid); err != nil {
		return err
	}
	if err := errs.writeText(f); err != nil {
		return err
	}
	_, err := f.WriteString(tail)
	return err
}

// unsavedNote names the workspace files whose open buffer has unsaved
// changes that differ from the disk: the command sees the disk.
func (s *Shell) unsavedNote() string {
	ws := s.env.Workspace
	var paths []string
	for _, p := range ws.Overlay.Paths() {
		b, ok := ws.Overlay.Get(p)
		if !ok || !b.Dirty {
			continue
		}
		if _, _, err := ws.Roots.Resolve(p); err != nil {
			continue
		}
		if disk, err := os.ReadFile(p); err == nil &&
			(string(disk) == b.Text || strings.TrimPrefix(string(disk), "\uFEFF") == b.Text) {
			continue
		}
		paths = append(paths, p)
	}
	if len(paths) == 0 {
		return ""
	}
	slices.Sort(paths)
	shown := paths[:min(len(paths), shellNoteMax)]
	note := "Note: these files have unsaved changes in the editor, so the command saw their saved (disk) versions: " +
		strings.Join(shown, ", ")
	if more := len(paths) - len(shown); more > 0 {
		note += fmt.Sprintf(", and %d more", more)
	}
	return note
}

// shellRun is one running command: its process, the goroutines that read
// its two pipes, and what has been kept of the output.
type shellRun struct {
	cmd     *exec.Cmd
	pgid    int
	pipes   [2]*os.File
	waitErr error // set before waitDone is closed
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
		if n > 0 {
			r.mu.Lock()
			if r.bgFile != nil {
				// A failed write to the background file loses output
				// nobody waits for; there is no one to tell.
				_, _ = r.bgFile.Write(buf[:n])
			}
			if r.attached {
				r.streams[i].write(buf[:n], &r.live)
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

func omittedLine(n int64) string { return fmt.Sprintf("[… %d bytes omitted]\n", n) }

// runeStart moves i forward to the start of a UTF-8 sequence.
func runeStart(s string, i int) int {
	for i < len(s) && i > 0 && s[i]&0xC0 == 0x80 {
		i++
	}
	return i
}

// shellStream is what is kept of stdout or stderr: the byte count, the
// binary verdict, and the cleaned text (ANSI removed, CRLF as LF, invalid
// UTF-8 as U+FFFD) in a spool, with the trailing white space cut off at
// the end.
type shellStream struct {
	total   int64
	sniffed int
	binary  bool
	cleaner textCleaner
	store   *spool
	// kept is the length of store up to its last non-white-space byte.
	kept int64
}

func (st *shellStream) write(p []byte, live *liveView) {
	st.total += int64(len(p))
	if st.binary {
		live.binaryBytes += int64(len(p))
		return
	}
	if st.sniffed < shellSniffLimit {
		n := min(len(p), shellSniffLimit-st.sniffed)
		st.sniffed += n
		if slices.Contains(p[:n], 0) {
			st.binary = true
			st.store.release()
			live.binary = true
			live.binaryBytes += st.total
			return
		}
	}
	clean := st.cleaner.clean(p, false)
	st.keep(clean)
	if !live.binary {
		live.append(clean)
	}
}

// keep appends cleaned text to the store, tracking the last non-white-space
// byte.
func (st *shellStream) keep(clean []byte) {
	if len(clean) == 0 {
		return
	}
	before := st.store.size
	st.store.write(clean)
	for i := len(clean) - 1; i >= 0; i-- {
		if !isSpaceByte(clean[i]) {
			st.kept = before + int64(i) + 1
			break
		}
	}
}

func isSpaceByte(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

// finish flushes the cleaner and cuts the trailing white space.
func (st *shellStream) finish() {
	if st.binary || st.store == nil {
		return
	}
	st.keep(st.cleaner.clean(nil, true))
	st.store.truncate(st.kept)
}

func (st *shellStream) spilled() bool {
	return !st.binary && st.store.file != nil
}

// inMemoryText is the stream's text for the llmContent when it was not
// spooled.
func (st *shellStream) inMemoryText() string {
	switch {
	case st.binary:
		return fmt.Sprintf("[binary output: %d bytes]", st.total)
	case st.store.size == 0:
		return "(empty)"
	}
	return string(st.store.mem)
}

// writeText writes the stream's text for the llmContent to f.
func (st *shellStream) writeText(f *os.File) error {
	if st.binary || st.store.size == 0 || st.store.file == nil {
		_, err := f.WriteString(st.inMemoryText())
		return err
	}
	return st.store.copyTo(f)
}

// displayText is the end of the stream's text for the display, and the
// size of the whole.
func (st *shellStream) displayText() (string, int64) {
	if st.binary {
		t := fmt.Sprintf("[binary output: %d bytes]", st.total)
		return t, int64(len(t))
	}
	if st.store.size == 0 {
		return "", 0
	}
	tail := st.store.tail(shellLiveLimit)
	return string(tail[runeStart(string(tail), 0):]), st.store.size
}

func (st *shellStream) release() {
	if st.store != nil {
		st.store.release()
	}
}

// liveView is the end of the combined live output.
type liveView struct {
	buf []byte
	// dropped counts bytes cut from the front of buf.
	dropped int64
	// binary stops the text display; binaryBytes counts what the binary
	// streams have sent.
	binary      bool
	binaryShown bool
	binaryBytes int64
}

func (l *liveView) append(p []byte) {
	l.buf = append(l.buf, p...)
	if len(l.buf) > 2*shellLiveLimit {
		cut := len(l.buf) - shellLiveLimit
		l.dropped += int64(cut)
		l.buf = append(l.buf[:0], l.buf[cut:]...)
	}
}

// render is the text of one live update: the whole output so far, cut to
// its last 64 KiB.
func (l *liveView) render() string {
	if l.binary {
		if !l.binaryShown {
			l.binaryShown = true
			return "[binary output: live display stopped]"
		}
		return "[binary output: " + formatBytes(l.binaryBytes) + " received]"
	}
	if len(l.buf) <= shellLiveLimit && l.dropped == 0 {
		return string(l.buf)
	}
	s := string(l.buf)
	cut := runeStart(s, len(s)-min(len(s), shellLiveLimit))
	return omittedLine(l.dropped+int64(cut)) + s[cut:]
}

// formatBytes shows a byte count as KB, MB or GB with one decimal.
func formatBytes(n int64) string {
	switch {
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GB", float64(n)/(1<<30))
}

// textCleaner turns raw terminal output into plain text as it streams:
// ANSI escape sequences (CSI, OSC, DCS and other strings, two- and
// three-byte escapes) are removed, "\r\n" becomes "\n", and invalid UTF-8
// becomes U+FFFD. Sequences split across writes are handled.
type textCleaner struct {
	state   uint8
	strEsc  bool // an ESC inside an OSC or DCS string
	cr      bool // a '\r' waits to see whether '\n' follows
	partial []byte
	out     []byte
}

const (
	ansiText uint8 = iota
	ansiEsc
	ansiCSI
	ansiString
	ansiOneMore
)

// clean returns the cleaned text of p; final flushes what is held back.
// The returned slice is valid until the next call.
func (c *textCleaner) clean(p []byte, final bool) []byte {
	c.out = c.out[:0]
	for _, b := range p {
		switch c.state {
		case ansiText:
			if b == 0x1b {
				c.state = ansiEsc
				continue
			}
			c.text(b)
		case ansiEsc:
			switch {
			case b == '[':
				c.state = ansiCSI
			case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
				c.state, c.strEsc = ansiString, false
			case strings.IndexByte("()*+-./#%", b) >= 0:
				c.state = ansiOneMore
			default:
				c.state = ansiText
			}
		case ansiCSI:
			switch {
			case b >= 0x40 && b <= 0x7e:
				c.state = ansiText
			case b >= 0x20 && b <= 0x3f:
			default:
				c.state = ansiText
				c.text(b)
			}
		case ansiString:
			switch {
			case b == 0x07:
				c.state = ansiText
			case c.strEsc && b == '\\':
				c.state = ansiText
			default:
				c.strEsc = b == 0x1b
			}
		case ansiOneMore:
			c.state = ansiText
		}
	}
	if final {
		if c.cr {
			c.cr = false
			c.rune('\r')
		}
		if len(c.partial) > 0 {
			c.partial = c.partial[:0]
			c.out = append(c.out, "\uFFFD"...)
		}
		c.state = ansiText
	}
	return c.out
}

// text handles one byte of text: CRLF first, then UTF-8.
func (c *textCleaner) text(b byte) {
	if c.cr {
		c.cr = false
		if b == '\n' {
			c.rune('\n')
			return
		}
		c.rune('\r')
	}
	if b == '\r' {
		c.cr = true
		return
	}
	c.rune(b)
}

// rune assembles UTF-8 sequences, replacing invalid bytes by U+FFFD.
func (c *textCleaner) rune(b byte) {
	if len(c.partial) == 0 {
		switch {
		case b < 0x80:
			c.out = append(c.out, b)
		case b >= 0xC2 && b <= 0xF4:
			c.partial = append(c.partial, b)
		default:
			c.out = append(c.out, "\uFFFD"...)
		}
		return
	}
	if b&0xC0 != 0x80 {
		// The sequence broke off: replace it, then take b afresh.
		c.partial = c.partial[:0]
		c.out = append(c.out, "\uFFFD"...)
		c.rune(b)
		return
	}
	c.partial = append(c.partial, b)
	if !fullRune(c.partial) {
		return
	}
	if validRune(c.partial) {
		c.out = append(c.out, c.partial...)
		c.partial = c.partial[:0]
		return
	}
	// An overlong or surrogate form: one replacement for the lead byte,
	// then the rest as they come.
	rest := append([]byte(nil), c.partial[1:]...)
	c.partial = c.partial[:0]
	c.out = append(c.out, "\uFFFD"...)
	for _, x := range rest {
		c.rune(x)
	}
}

func fullRune(p []byte) bool {
	switch {
	case p[0] < 0xE0:
		return len(p) >= 2
	case p[0] < 0xF0:
		return len(p) >= 3
	}
	return len(p) >= 4
}

func validRune(p []byte) bool { return utf8.Valid(p) }
