package tools

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// terminalCleanup bounds the kill and release requests sent after a
// cancelled or timed-out command, when the call's own context is over.
const terminalCleanup = 5 * time.Second

// runInTerminal runs a foreground command in the editor's terminal, which
// the user watches live in the tool call. handled is false when the editor
// has no terminals; the command then runs locally. Cancellation kills and
// releases the terminal before ctx.Err() is returned, so nothing keeps
// running.
func (s *Shell) runInTerminal(ctx context.Context, call *Call, ct ClientTerminals, command, dir, dirLabel, note string, timeout int, onOutput func(Output)) (Result, bool, error) {
	argv := pickShell(runtime.GOOS, os.Getenv).argv(command)
	term, ok, err := ct.StartTerminal(ctx, call.SessionID, TerminalSpec{
		Command: argv[0], Args: argv[1:], Cwd: dir, OutputByteLimit: shellSpoolMax,
	})
	if !ok {
		return Result{}, false, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, true, ctx.Err()
		}
		return ErrorResult(errorShellExecute, "The editor could not run the command in its terminal: "+err.Error()), true, nil
	}
	// The requests after the command are bounded by terminalCleanup,
	// not by ctx, which may be over by then.
	bounded := func(req func(context.Context) error) {
		c, cancel := context.WithTimeout(context.Background(), terminalCleanup)
		defer cancel()
		_ = req(c)
	}
	display := &TerminalDisplay{TerminalID: term.ID()}
	if onOutput != nil {
		onOutput(Output{Display: display})
	}

	type waited struct {
		exit TerminalExit
		err  error
	}
	done := make(chan waited, 1)
	waitCtx, stopWait := context.WithCancel(context.Background())
	defer stopWait()
	go func() {
		exit, err := term.Wait(waitCtx)
		done <- waited{exit, err}
	}()

	limit := time.NewTimer(time.Duration(timeout) * time.Millisecond)
	defer limit.Stop()
	timedOut := false
	var w waited
	select {
	case w = <-done:
	case <-ctx.Done():
		bounded(func(c context.Context) error {
			_ = term.Kill(c)
			return term.Release(c)
		})
		return Result{}, true, ctx.Err()
	case <-limit.C:
		timedOut = true
		bounded(term.Kill)
		select {
		case w = <-done:
		case <-time.After(terminalCleanup):
		}
	}

	var out TerminalOutput
	var outErr error
	bounded(func(c context.Context) error {
		out, outErr = term.Output(c)
		return outErr
	})
	bounded(term.Release)

	var errs []string
	if timedOut {
		errs = append(errs, fmt.Sprintf("the command ran past its %d ms timeout and was stopped.", timeout))
	}
	if w.err != nil {
		errs = append(errs, "the editor did not report how the command ended: "+w.err.Error())
	}
	if outErr != nil {
		errs = append(errs, "the editor did not return the output: "+outErr.Error())
	}
	exit := w.exit
	if exit.Code == nil && exit.Signal == "" && out.Exit != nil {
		exit = *out.Exit
	}
	exitCode, signal := "(none)", "(none)"
	if exit.Code != nil {
		exitCode = strconv.Itoa(*exit.Code)
	}
	if exit.Signal != "" {
		signal = exit.Signal
	}
	text := out.Text
	if out.Truncated {
		text = "[the editor kept only the end of the output]\n" + text
	}
	errLine := "(none)"
	if len(errs) > 0 {
		errLine = strings.Join(errs, "; ")
	}
	llm := "Command: " + command + "\nDirectory: " + dirLabel +
		"\nStdout: " + text +
		"\nStderr: (ran in the editor's terminal, which shows both streams together under Stdout)" +
		"\nError: " + errLine +
		"\nExit Code: " + exitCode +
		"\nSignal: " + signal +
		"\nBackground PIDs: (none)" +
		"\nProcess Group PGID: (none)"
	if note != "" {
		llm += "\n" + note
	}
	tr := s.env.TruncateToolOutput(s.Name(), llm)
	return TextResult(tr.Text, display), true, nil
}
