package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
)

// Some editors keep the files and the terminals themselves: an Agent Client
// Protocol client serves reads of its unsaved buffers (fs/read_text_file),
// takes writes into them (fs/write_text_file) and runs commands in its own
// terminals (terminal/*). A Host that can do this implements ClientFiles or
// ClientTerminals as well; the tools find them by type assertion, so every
// other Host (and a nil one) keeps the plain behaviour: the workspace
// overlay, the disk and local processes.

// ClientFiles is a Host whose editor serves file reads and writes.
type ClientFiles interface {
	// SyncFile asks the editor for its text of path and brings the
	// workspace overlay in line with it before a tool reads the file:
	// the editor's text becomes the file's buffer when it differs from
	// the disk, and the buffer is dropped when it matches. It returns nil
	// without asking when the editor does not serve reads, or not this
	// path; an error matching fs.ErrNotExist when the editor says the
	// file does not exist; one matching ErrClientRefused when the editor
	// answered the read with any other error (its read policy said no, or
	// it failed): the read fails with that reason and the disk is not
	// read instead. Other errors are the Host's to report: the tools then
	// read the disk.
	SyncFile(ctx context.Context, sessionID, path string) error
	// WriteFile writes text to path through the editor. handled is false
	// when the editor does not take writes, or not for this path; the
	// tools then write the disk themselves. After a handled write the
	// overlay holds text (or the disk does).
	WriteFile(ctx context.Context, sessionID, path, text string) (handled bool, err error)
}

// ErrClientRefused: the editor answered a read of a file it serves with an
// error. The file is not read from the disk behind its back.
var ErrClientRefused = errors.New("the editor refused to read the file")

// ClientTerminals is a Host whose editor runs shell commands in terminals
// of its own, which the user sees live.
type ClientTerminals interface {
	// StartTerminal starts spec in a new terminal of the editor. ok is
	// false when the editor has no terminals; then nothing was started.
	StartTerminal(ctx context.Context, sessionID string, spec TerminalSpec) (term Terminal, ok bool, err error)
}

// TerminalSpec is a command for an editor's terminal.
type TerminalSpec struct {
	Command string
	Args    []string
	// Cwd is an absolute directory.
	Cwd string
	// OutputByteLimit is how much of the end of the output the editor
	// keeps; 0 leaves it to the editor.
	OutputByteLimit int
}

// Terminal is one running (or finished) terminal of the editor. Its methods
// may be called after ctx of StartTerminal ended.
type Terminal interface {
	// ID names the terminal in tool call content.
	ID() string
	// Output is what the terminal printed so far (the end of it, when the
	// editor cut it), with the exit status once the command ended.
	Output(ctx context.Context) (TerminalOutput, error)
	// Wait returns when the command exits.
	Wait(ctx context.Context) (TerminalExit, error)
	// Kill stops the command; the terminal stays until Release.
	Kill(ctx context.Context) error
	// Release kills the command if it still runs and frees the terminal.
	Release(ctx context.Context) error
}

// TerminalOutput is a terminal's output so far.
type TerminalOutput struct {
	Text      string
	Truncated bool
	// Exit is set once the command has exited.
	Exit *TerminalExit
}

// TerminalExit is how a terminal's command ended: an exit code, or the
// signal that stopped it.
type TerminalExit struct {
	Code   *int
	Signal string
}

// TerminalDisplay shows a call's live terminal in the editor by its id.
type TerminalDisplay struct {
	TerminalID string `json:"terminalId"`
}

func (*TerminalDisplay) isDisplay() {}

// clientFiles returns the editor's file service for call, or nil.
func clientFiles(call *Call) ClientFiles {
	if call == nil || call.Host == nil {
		return nil
	}
	cf, _ := call.Host.(ClientFiles)
	return cf
}

// syncClient brings the overlay's view of abs up to date with the editor's
// before a tool reads it (a no-op without an editor that serves reads, and
// for media, whose bytes always come from the disk). The error is ctx's,
// or one matching fs.ErrNotExist when the editor says there is no such
// file.
func syncClient(ctx context.Context, call *Call, abs string) error {
	cf := clientFiles(call)
	if cf == nil || bufferFileType(filepath.Base(abs)).isMedia() {
		return nil
	}
	if fi, err := os.Stat(abs); err == nil && !fi.Mode().IsRegular() {
		return nil // a directory or a device: the disk's answer stands
	}
	err := cf.SyncFile(ctx, call.SessionID, abs)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if err != nil && (pathMissing(err) || errors.Is(err, ErrClientRefused)) {
		return err
	}
	return nil
}

// syncBeforeChange is syncClient for the tools that change a file. The
// editor saying the file does not exist leaves the question to the disk (a
// creation, usually), and a cancelled ctx is seen by the caller's caller.
// A refused read leaves the change to start from the disk: the editor
// reviews the change itself before anything is written.
func syncBeforeChange(ctx context.Context, call *Call, abs string) {
	_ = syncClient(ctx, call, abs)
}
