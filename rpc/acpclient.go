package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// What an ACP client does for the agent (protocol.md §9): it serves reads
// of its buffers (fs/read_text_file), takes writes into them
// (fs/write_text_file) and runs commands in its terminals (terminal/*),
// each when it advertises it at initialize. The host implements the tools'
// ClientFiles and ClientTerminals with these requests.
//
// The client's text of a file is kept in the workspace overlay, where the
// tools already look first: a read asks the client, and its answer becomes
// the file's buffer when it differs from the disk (an unsaved change) or
// drops the buffer when it does not. So read_file, read_many_files, the
// text an edit starts from, the prior-read checks and grep/glob (which
// search the disk plus the overlay) all see what the client has sent.

// acpNotFound is ACP's "resource not found" error, a client's answer to
// fs/read_text_file for a file that does not exist.
const acpNotFound = -32002

// terminalCreateWait bounds the wait for a terminal/create answer.
const terminalCreateWait = 30 * time.Second

// readACPClientCaps reads initialize's clientCapabilities into c.
func readACPClientCaps(c *clientCaps, raw json.RawMessage) {
	var a struct {
		FS struct {
			ReadTextFile  bool `json:"readTextFile"`
			WriteTextFile bool `json:"writeTextFile"`
		} `json:"fs"`
		Terminal bool `json:"terminal"`
		Session  struct {
			Notices json.RawMessage `json:"notices"`
		} `json:"session"`
	}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &a) // a malformed object advertises nothing
	}
	c.ReadTextFile, c.WriteTextFile, c.Terminal = a.FS.ReadTextFile, a.FS.WriteTextFile, a.Terminal
	// session.notices: {} advertises notice updates; null or absent not.
	n := strings.TrimSpace(string(a.Session.Notices))
	c.Notices = strings.HasPrefix(n, "{")
}

// clientServes reports whether path is the client's to read and write: a
// file inside the workspace roots (the sessions' folders). Anything else,
// such as the global memory file, is read from and written to the disk.
func (h *host) clientServes(path string) bool {
	_, _, err := h.s.ws.Roots.Resolve(path)
	return err == nil
}

// SyncFile implements tools.ClientFiles with fs/read_text_file.
func (h *host) SyncFile(ctx context.Context, sessionID, path string) error {
	if !h.s.opts.ACP || !h.s.clientCaps().ReadTextFile || !h.clientServes(path) {
		return nil
	}
	var res struct {
		Content *string `json:"content"`
	}
	err := h.call(ctx, "fs/read_text_file", map[string]any{"sessionId": sessionID, "path": path}, &res)
	var rpcErr *jsonrpc2.Error
	switch {
	case err == nil && res.Content == nil:
		err = errors.New("the answer has no content")
	case err == nil:
		h.adopt(path, *res.Content)
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &rpcErr) && rpcErr.Code == acpNotFound:
		h.s.ws.Overlay.Close(path)
		return &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist}
	case errors.As(err, &rpcErr):
		// The client said no (its read policy) or failed: the file is
		// not read from the disk behind its back, and the model is told.
		h.s.log.Infof("the editor refused to read %s (fs/read_text_file: %s)", path, rpcErr.Message)
		return fmt.Errorf("%w (fs/read_text_file answered %d: %s)", tools.ErrClientRefused, rpcErr.Code, rpcErr.Message)
	}
	// No answer at all (the connection broke, or a malformed one): the
	// same refusal, since the client's policy is unknown.
	h.s.log.Warnf("the editor could not read %s (fs/read_text_file: %v)", path, err)
	return fmt.Errorf("%w (fs/read_text_file: %v)", tools.ErrClientRefused, err)
}

// WriteFile implements tools.ClientFiles with fs/write_text_file.
func (h *host) WriteFile(ctx context.Context, sessionID, path, text string) (bool, error) {
	if !h.s.opts.ACP || !h.s.clientCaps().WriteTextFile || !h.clientServes(path) {
		return false, nil
	}
	var res json.RawMessage
	if err := h.call(ctx, "fs/write_text_file", map[string]any{"sessionId": sessionID, "path": path, "content": text}, &res); err != nil {
		return true, err
	}
	h.adopt(path, text)
	return true, nil
}

// adopt makes text the tools' view of path: an overlay buffer when it
// differs from the disk, the disk itself when it does not.
func (h *host) adopt(path, text string) {
	ov := h.s.ws.Overlay
	if raw, _, err := workspace.ReadFileBounded(path, workspace.MaxReadSize); err == nil {
		// A binary file on disk stays the disk's: a client's text of it
		// is a lossy decoding, not an unsaved change.
		if disk, _ := workspace.DecodeFileText(raw); disk == text || tools.DetectFileType(filepath.Base(path), raw) == tools.FileBinary {
			ov.Close(path)
			return
		}
	}
	if b, ok := ov.Get(path); ok && b.Text == text {
		return
	}
	v, _ := ov.Version(path)
	ov.Open(path, v+1, text)
	// Marked unsaved (an empty change batch does only that), so that a
	// shell command's result notes that it saw the disk's version.
	_ = ov.Apply(path, v+1, nil, workspace.UTF8)
}

// acpWriteDisk carries out an accepted change of a file whose text came
// from the client when the client does not take writes: the disk is
// written atomically, keeping the file's format, and the buffer dropped.
func (h *host) acpWriteDisk(path, text string) error {
	f := workspace.TextFormat{}
	if raw, _, err := workspace.ReadFileBounded(path, workspace.MaxReadSize); err == nil {
		f = workspace.DetectFormat(raw)
	}
	if err := workspace.WriteText(path, text, f); err != nil {
		return &tools.BufferEditError{Reason: err.Error()}
	}
	h.s.ws.Overlay.Close(path)
	return nil
}

// StartTerminal implements tools.ClientTerminals with terminal/create.
func (h *host) StartTerminal(ctx context.Context, sessionID string, spec tools.TerminalSpec) (tools.Terminal, bool, error) {
	if !h.s.opts.ACP || !h.s.clientCaps().Terminal {
		return nil, false, nil
	}
	params := map[string]any{"sessionId": sessionID, "command": spec.Command, "args": spec.Args, "env": []any{}}
	if spec.Cwd != "" {
		params["cwd"] = spec.Cwd
	}
	if spec.OutputByteLimit > 0 {
		params["outputByteLimit"] = spec.OutputByteLimit
	}
	var res struct {
		TerminalID string `json:"terminalId"`
	}
	// A terminal/create withdrawn by a cancel could still create a
	// terminal nobody releases: the request is seen through, and a
	// cancelled caller kills and releases what it made.
	createCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), terminalCreateWait)
	defer cancel()
	if err := h.call(createCtx, "terminal/create", params, &res); err != nil {
		return nil, true, err
	}
	if res.TerminalID == "" {
		return nil, true, errors.New("terminal/create answered without a terminalId")
	}
	return &acpTerminal{h: h, session: sessionID, id: res.TerminalID}, true, nil
}

// acpTerminal is one terminal of the client.
type acpTerminal struct {
	h       *host
	session string
	id      string
}

type acpExitStatus struct {
	ExitCode *int    `json:"exitCode"`
	Signal   *string `json:"signal"`
}

func (e *acpExitStatus) exit() tools.TerminalExit {
	out := tools.TerminalExit{Code: e.ExitCode}
	if e.Signal != nil {
		out.Signal = *e.Signal
	}
	return out
}

func (t *acpTerminal) ID() string { return t.id }

func (t *acpTerminal) params() map[string]any {
	return map[string]any{"sessionId": t.session, "terminalId": t.id}
}

func (t *acpTerminal) Output(ctx context.Context) (tools.TerminalOutput, error) {
	var res struct {
		Output     string         `json:"output"`
		Truncated  bool           `json:"truncated"`
		ExitStatus *acpExitStatus `json:"exitStatus"`
	}
	if err := t.h.call(ctx, "terminal/output", t.params(), &res); err != nil {
		return tools.TerminalOutput{}, fmt.Errorf("terminal/output: %w", err)
	}
	out := tools.TerminalOutput{Text: res.Output, Truncated: res.Truncated}
	if res.ExitStatus != nil {
		e := res.ExitStatus.exit()
		out.Exit = &e
	}
	return out, nil
}

func (t *acpTerminal) Wait(ctx context.Context) (tools.TerminalExit, error) {
	var res acpExitStatus
	if err := t.h.call(ctx, "terminal/wait_for_exit", t.params(), &res); err != nil {
		return tools.TerminalExit{}, fmt.Errorf("terminal/wait_for_exit: %w", err)
	}
	return res.exit(), nil
}

func (t *acpTerminal) Kill(ctx context.Context) error {
	var res json.RawMessage
	return t.h.call(ctx, "terminal/kill", t.params(), &res)
}

func (t *acpTerminal) Release(ctx context.Context) error {
	var res json.RawMessage
	return t.h.call(ctx, "terminal/release", t.params(), &res)
}
