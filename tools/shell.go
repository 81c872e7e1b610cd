package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qwen-ls/qwen-ls/tools/procgroup"
	"github.com/qwen-ls/qwen-ls/tools/sandbox"
	"github.com/qwen-ls/qwen-ls/tools/shellsafe"
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
      "description": "Timeout of a foreground command in milliseconds, not seconds: a whole number from 1000 (1 second) to 600000 (10 minutes). Default 120000 (2 minutes)."
    }
  },
  "required": ["command"]
}`

// The limits of tools.md §3.8.
const (
	shellDefaultTimeout = 120000
	// shellMinTimeout is qwen-ls's own floor: under one second the
	// model most likely meant seconds.
	shellMinTimeout = 1000
	shellMaxTimeout = 600000
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
// env a processGroups registry when it has none, so that the server can
// kill what the commands leave running (env.Processes.KillAll) on exit.
func NewShell(env *Env) *Shell {
	if env.Processes == nil {
		env.Processes = &processGroups{}
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
	if strings.ContainsRune(cmd, 0) {
		return InvalidParams(`Argument "command" contains a NUL character, which no shell command can hold. Remove it and try again.`)
	}
	if !posixAnalysis(runtime.GOOS) {
		// cmd.exe and PowerShell are not parsed: the command asks.
		if _, terr := shellTimeout(params); terr != nil {
			return terr
		}
		_, terr := s.directory(params)
		return terr
	}
	a, err := shellsafe.Parse(cmd)
	if err != nil {
		return InvalidParams(fmt.Sprintf("Could not parse the command: %s. Check the quoting and try again.", err))
	}
	if !a.HasRoot() {
		return InvalidParams("The command runs no program (it only sets variables), so there is nothing to approve or run.")
	}
	if bg, _ := boolParam(params, "is_background"); bg && a.TrailingBackground {
		return InvalidParams(`With is_background true, do not end the command with "&": remove the trailing "&", and the command still runs in the background.`)
	}
	if _, terr := shellTimeout(params); terr != nil {
		return terr
	}
	_, terr := s.directory(params)
	return terr
}

// shellTimeout reads the timeout argument: the default when it is absent,
// else a whole number of milliseconds from shellMinTimeout to
// shellMaxTimeout. Models now and then send seconds (1.5, 30): rounding
// 1.5 up to 2 ms would kill the command at once, so a fraction and a value
// under one second are refused with an error that names the unit, and,
// when the value reads as seconds, the number to send instead.
func shellTimeout(params map[string]any) (int, *ToolError) {
	if _, given := params["timeout"]; !given {
		return shellDefaultTimeout, nil
	}
	const unit = `Argument "timeout" is in milliseconds and must be a whole number from 1000 (1 second) to 600000 (10 minutes)`
	f, ok := floatParam(params, "timeout")
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, InvalidParams(unit + ".")
	}
	shown := strconv.FormatFloat(f, 'g', -1, 64)
	switch {
	case f > shellMaxTimeout:
		return 0, InvalidParams(`Argument "timeout" can be at most 600000 (10 minutes).`)
	case f != math.Trunc(f):
		return 0, InvalidParams(unit + "; " + shown + " is not a whole number." + asSeconds(f, shown))
	case f < shellMinTimeout:
		return 0, InvalidParams(unit + "; " + shown + " is less than 1 second." + asSeconds(f, shown))
	}
	return int(f), nil
}

// asSeconds suggests the milliseconds for a timeout the model may have
// meant in seconds, when that is a whole number in range.
func asSeconds(f float64, shown string) string {
	ms := math.Round(f * 1000)
	if f <= 0 || ms < shellMinTimeout || ms > shellMaxTimeout || math.Abs(ms-f*1000) > 1e-6 {
		return ""
	}
	return fmt.Sprintf(" For %s seconds, send %d.", shown, int(ms))
}

// directory resolves the directory argument (tools.md §3.8 step 6).
func (s *Shell) directory(params map[string]any) (string, *ToolError) {
	primary := s.env.Workspace.Roots.Primary()
	raw, _ := String(params, "directory")
	p := cleanPathArg(raw)
	if p == "" {
		if primary == "" {
			return "", InvalidParams("No workspace folder is open, so there is no directory to run the command in.")
		}
		return primary, nil
	}
	if driveless(s.env.Workspace.Paths.PathFlavor(), p) {
		return "", InvalidParams(fmt.Sprintf("Directory %s names no drive. Give a directory inside the workspace, relative to %s or starting with its drive.", raw, primary))
	}
	if !filepath.IsAbs(p) {
		if primary == "" {
			return "", InvalidParams("No workspace folder is open, so a relative directory cannot be resolved.")
		}
		p = filepath.Join(primary, p)
	}
	if _, _, err := s.env.Workspace.Roots.Resolve(p); err != nil {
		return "", NewError(errorPathNotInWorkspace, fmt.Sprintf("Directory %s is outside the workspace.", p))
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
	a, err := s.env.AnalyzeShellCall(params)
	if err != nil {
		return nil, InvalidParams(fmt.Sprintf("Could not parse the command: %s. Check the quoting and try again.", err))
	}
	if a.ReadOnly() {
		if s.env.readOnlyNeedsAsk() {
			// No sandbox here to catch a mistake of the parser.
			conf := ShellConfirmation(cmd, a.SubCommands)
			conf.Title += " (no sandbox on this system)"
			conf.Unconfined = true
			return conf, nil
		}
		return nil, nil
	}
	return ShellConfirmation(cmd, a.NeedingApproval()), nil
}

// AnalyzeShellCall judges the command of a run_shell_command call, in the
// directory the call names (analyzeShell).
func (e *Env) AnalyzeShellCall(params map[string]any) (*shellsafe.Analysis, error) {
	cmd, _ := String(params, "command")
	dir, _ := String(params, "directory")
	return e.analyzeShell(cmd, dir)
}

// analyzeShell judges cmd for this workspace (shellsafe.Analyze), as run
// in dir: the directory argument of run_shell_command, relative to the
// primary root ("" is the primary root). A directory outside the roots
// leaves the analysis without one, so no git command is read-only; the
// call is refused before it runs anyway.
func (e *Env) analyzeShell(cmd, dir string) (*shellsafe.Analysis, error) {
	return e.analyzeShellFor(runtime.GOOS, cmd, dir)
}

// analyzeShellFor is analyzeShell on the system goos: on Windows the
// command is not analysed (shellsafe.Verbatim), so it is never read-only
// and only a rule naming the whole command allows it.
func (e *Env) analyzeShellFor(goos, cmd, dir string) (*shellsafe.Analysis, error) {
	if !posixAnalysis(goos) {
		return shellsafe.Verbatim(cmd), nil
	}
	return shellsafe.Analyze(cmd, e.shellContext(dir))
}

// shellContext is what the shell analysis is told of the workspace.
func (e *Env) shellContext(dir string) shellsafe.Context {
	ctx := shellsafe.Context{RepoConfigTrusted: e.repoConfigTrusted(), CDPath: os.Getenv("CDPATH")}
	if home, err := os.UserHomeDir(); err == nil {
		ctx.Home = home
	}
	if e == nil || e.Workspace == nil || e.Workspace.Roots == nil {
		return ctx
	}
	roots := e.Workspace.Roots
	ctx.Inside = func(p string) bool {
		_, _, err := roots.Resolve(p)
		return err == nil
	}
	d := cleanPathArg(dir)
	primary := roots.Primary()
	if primary != "" {
		ctx.Base = filepath.Clean(primary)
	}
	switch {
	case d == "":
		d = primary
	case !filepath.IsAbs(d) && primary != "":
		d = filepath.Join(primary, d)
	case !filepath.IsAbs(d):
		d = ""
	}
	if d != "" && ctx.Inside(d) {
		ctx.Dir = filepath.Clean(d)
	}
	return ctx
}

// repoConfigTrusted reports whether the workspace's folder is trusted, so
// that its repository configuration may steer git.
func (e *Env) repoConfigTrusted() bool {
	return e != nil && e.Workspace != nil && e.Workspace.Settings != nil && e.Workspace.Settings.Trust().Trusted
}

// AllowedInPlanMode lets plan mode run a command whose sub-commands are all
// read-only, without command substitution (tools.md §6.4).
func (s *Shell) AllowedInPlanMode(params map[string]any) bool {
	a, err := s.env.AnalyzeShellCall(params)
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
		return ErrorResult(errorShellExecute, terr.Message), nil
	}
	dirLabel := strings.TrimSpace(stringParam(params, "directory"))
	if dirLabel == "" {
		dirLabel = "(root)"
	}
	background, _ := boolParam(params, "is_background")
	timeout, _ := shellTimeout(params)
	sessionID := ""
	if call != nil {
		sessionID = call.SessionID
	}
	note := s.unsavedNote()
	pol := s.shellPolicy(call)

	// The editor's terminal cannot be sandboxed: only a command the
	// person approved, or one run with the sandbox off, goes there.
	if pol.Mode == sandbox.None && !background && call != nil && call.Host != nil {
		if ct, ok := call.Host.(ClientTerminals); ok {
			if res, handled, err := s.runInTerminal(ctx, call, ct, command, dir, dirLabel, note, timeout, onOutput); handled {
				return res, err
			}
		}
	}

	res, err := s.runPolicy(ctx, call, command, dir, dirLabel, note, background, timeout, sessionID, pol, onOutput)
	if err != nil || res.blocked == "" {
		return res.Result, err
	}
	reason := "blocked by the sandbox: " + res.blocked
	if call == nil || call.AskOutsideSandbox == nil {
		return withSandboxNote(res.Result, reason+". A command that runs unasked cannot do this; the person can run it themselves, or approve it when it asks."), nil
	}
	ok, aerr := call.AskOutsideSandbox(ctx, reason)
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	if aerr != nil || !ok {
		return withSandboxNote(res.Result, reason+". The person declined to run it outside the sandbox."), nil
	}
	pol.Mode = sandbox.None
	res, err = s.runPolicy(ctx, call, command, dir, dirLabel, note, background, timeout, sessionID, pol, onOutput)
	return res.Result, err
}

// policyResult is a command's result and what the sandbox blocked, if it
// looks like it did.
type policyResult struct {
	Result
	blocked string
}

// withSandboxNote adds a line saying what the sandbox blocked to the
// model's text and the display.
func withSandboxNote(r Result, note string) Result {
	if r.Error != nil {
		return r
	}
	r.LLMContent = append(r.LLMContent, TextPart("Sandbox: "+note))
	if md, ok := r.Display.(Markdown); ok {
		r.Display = Markdown(string(md) + "\n\n" + note)
	} else if r.Display == nil {
		r.Display = Markdown(note)
	}
	return r
}

// runPolicy runs the command once under pol.
func (s *Shell) runPolicy(ctx context.Context, call *Call, command, dir, dirLabel, note string, background bool, timeout int, sessionID string, pol sandbox.Policy, onOutput func(Output)) (policyResult, error) {
	run, err := s.start(command, dir, background, sessionID, pol)
	if err != nil {
		return policyResult{Result: ErrorResult(errorShellExecute, err.Error())}, nil
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
			return policyResult{}, ctx.Err()
		case <-wait.C:
			run.detach()
			run.release()
			s.forgetWhenDone(run)
			return policyResult{Result: s.stillRunning(run, command, dirLabel)}, nil
		}
		run.drain()
		return s.finishPolicy(run, command, dirLabel, note, false, timeout), nil
	}

	limit := time.NewTimer(time.Duration(timeout) * time.Millisecond)
	defer limit.Stop()
	timedOut := false
	select {
	case <-run.waitDone:
	case <-ctx.Done():
		procgroup.Terminate(run.pgid)
		<-run.waitDone
		run.drain()
		run.release()
		if len(run.leftovers()) == 0 {
			s.env.Processes.Forget(run.pgid)
		}
		return policyResult{}, ctx.Err()
	case <-limit.C:
		timedOut = true
		procgroup.Terminate(run.pgid)
		<-run.waitDone
	}
	run.drain()
	return s.finishPolicy(run, command, dirLabel, note, timedOut, timeout), nil
}

// finishPolicy is finish, and what the sandbox blocked when the command
// failed. A command that succeeded although the sandbox refused it
// something (a hook's write during a commit) says so in its result.
func (s *Shell) finishPolicy(run *shellRun, command, dirLabel, note string, timedOut bool, timeout int) policyResult {
	var blocked string
	if !timedOut && run.status.Code != 0 {
		run.mu.Lock()
		stderr, _ := run.streams[1].displayText()
		run.mu.Unlock()
		blocked = blockedBySandbox(run.policy, run.denials, run.dir, stderr)
	}
	res := s.finish(run, command, dirLabel, note, timedOut, timeout)
	if blocked == "" && len(run.denials) > 0 {
		res = withSandboxNote(res, "refused "+blockedBySandbox(run.policy, run.denials, run.dir, "")+".")
	}
	return policyResult{Result: res, blocked: blocked}
}

func stringParam(params map[string]any, name string) string {
	v, _ := String(params, name)
	return v
}

// stopHint is the command that stops a background group on the system
// goos: the group's kill on Unix; on Windows taskkill of the process tree.
func stopHint(goos, pgid string) string {
	if goos == "windows" {
		return "taskkill /T /F /PID " + pgid
	}
	return "kill -- -" + pgid
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
		"The command is still running in the background. Read the output file with read_file; stop it with `" + stopHint(runtime.GOOS, pgid) + "`."
	display := fmt.Sprintf("Running in the background (process group %d); output: %s", run.pgid, run.bgPath)
	return TextResult(text, Markdown(display))
}

// finish builds the result of a command that has exited.
func (s *Shell) finish(run *shellRun, command, dirLabel, note string, timedOut bool, timeout int) Result {
	defer run.release()
	leftovers := run.leftovers()
	if len(leftovers) == 0 {
		s.env.Processes.Forget(run.pgid)
	}
	exitCode, signal := "(none)", "(none)"
	var errs []string
	if timedOut {
		errs = append(errs, fmt.Sprintf("the command ran past its %d ms timeout and was stopped.", timeout))
	}
	var exit int
	if st := run.status; st.Signal != 0 {
		signal = procgroup.SignalName(st.Signal)
	} else if st.Code >= 0 {
		exit = st.Code
		exitCode = strconv.Itoa(exit)
	}
	if run.status.Err != nil {
		errs = append(errs, run.status.Err.Error())
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
	f, saveErr := createOutputFile(s.env.ProjectTempDir(), s.Name())
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
		tr, err = truncateFile(f.Name(), keep, saveErr, s.env.outputLimits())
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
