package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// The <verb> of the prior-read messages (tools.md §2.9).
const (
	verbEditing     = "editing"
	verbOverwriting = "overwriting"
)

// priorText is how edit and write_file start a proposal: the editor's
// pending changes to abs reach the server first, the prior-read check
// passes (verb names the change in its refusal), and the file's text is
// read. snap is nil when the file does not exist; err is a failure to read
// it, for the caller to word.
func (e *Env) priorText(ctx context.Context, call *Call, abs, verb string) (snap *workspace.Snapshot, terr *ToolError, err error) {
	syncBeforeChange(ctx, call, abs)
	exists, terr := e.checkPriorRead(call.Ledger, abs, verb)
	if terr != nil || !exists {
		return nil, terr, nil
	}
	snap, err = e.Workspace.ReadText(abs)
	switch {
	case missing(err):
		return nil, nil, nil
	case err != nil:
		return nil, nil, err
	}
	return snap, nil, nil
}

// checkPriorRead is the prior-read check of tools.md §2.9 that edit and
// write_file run when they compute a proposal: a file may be changed only
// if this session has read it (partly counts), it has not changed since
// (Env.unchanged decides), and it holds text. A missing file passes: it is
// a creation, and exists is false.
func (e *Env) checkPriorRead(l *Ledger, abs, verb string) (exists bool, terr *ToolError) {
	if _, open := e.Workspace.Overlay.Version(abs); !open {
		fi, err := os.Stat(abs)
		switch {
		case missing(err):
			return false, nil
		case err != nil:
			return true, cannotVerify(abs, err)
		case fi.IsDir():
			return true, Errorf(errorTargetIsDirectory, "%s is a directory, not a file.", abs)
		case !fi.Mode().IsRegular():
			return true, notRegularFile(abs)
		}
	}
	entry, known, unchanged, err := e.unchanged(l, abs)
	switch {
	case !known:
		return true, Errorf(errorEditRequiresPriorRead,
			"You have not read %s in this session. Read it with read_file before %s it.", abs, verb)
	case missing(err):
		// Deleted since the stat: it is a creation now.
		return false, nil
	case err != nil:
		return true, cannotVerify(abs, err)
	case !unchanged:
		return true, Errorf(errorFileChangedSinceRead,
			"%s changed after you last read it. Read it again with read_file before %s it.", abs, verb)
	case !entry.Editable:
		kind := entry.Kind
		if kind == "" {
			kind = "binary"
		}
		return true, Errorf(errorEditRequiresPriorRead,
			"%s holds %s content, which this tool cannot change; use run_shell_command or another tool instead.", abs, kind)
	}
	return true, nil
}

// missing reports whether err says the file is not there: it does not
// exist, or a component of its path is a file (ENOTDIR), so it cannot.
func missing(err error) bool {
	return workspace.IsNotExist(err) || errors.Is(err, syscall.ENOTDIR)
}

// cannotVerify is the answer when the file could not be looked at.
func cannotVerify(abs string, err error) *ToolError {
	return NewError(errorPriorReadVerificationFailed, fmt.Sprintf(
		"Could not tell whether %s changed since you read it (%s). Read it again with read_file, then retry.", abs, rootCause(err)))
}

// notRegularFile is the answer for a FIFO, socket or device.
func notRegularFile(abs string) *ToolError {
	return Errorf(errorEditRequiresPriorRead, "%s is a FIFO, socket or device; this tool cannot change it.", abs)
}
