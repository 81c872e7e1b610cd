package tools

import (
	"crypto/sha256"
	"os"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// unchanged answers tools.md §2.9's question "is abs as this session last
// saw it?". known is false when the ledger has no entry for abs (then
// nothing else is meaningful). Otherwise the file is unchanged when
//
//   - it is open in the editor at the buffer version the entry recorded; or
//   - it is not open, the entry came from the disk, and its mtime and size
//     are as recorded; or, failing both,
//   - its current content (§2.3: the open buffer, else the disk) hashes to
//     the recorded SHA-256: the decoded text for text, SVG and notebooks,
//     the bytes for binary, media and PDF entries.
//
// err reports a file that could not be stat-ed or read for the last two
// checks (a missing file included: workspace.IsNotExist tells it apart);
// unchanged is false then. Callers that need the §2.9 table check for a
// missing file, a directory and a special file first.
func (e *Env) unchanged(l *Ledger, abs string) (entry ledgerEntry, known, unchanged bool, err error) {
	entry, known = l.lookup(abs)
	if !known {
		return entry, false, false, nil
	}
	if v, open := e.Workspace.Overlay.Version(abs); open {
		if entry.Source == workspace.FromBuffer && v == entry.Version {
			return entry, true, true, nil
		}
	} else if entry.Source == workspace.FromDisk {
		fi, err := os.Stat(abs)
		if err != nil {
			return entry, true, false, err
		}
		if fi.Size() == entry.Size && fi.ModTime().Equal(entry.ModTime) {
			return entry, true, true, nil
		}
	}
	hash, err := e.currentHash(abs, entry)
	if err != nil {
		return entry, true, false, err
	}
	return entry, true, hash == entry.Hash, nil
}

// currentHash hashes what a read of abs would see now, the way the
// entry's hash was made.
func (e *Env) currentHash(abs string, entry ledgerEntry) ([32]byte, error) {
	if rawKind(entry.Kind) {
		raw, _, err := workspace.ReadFileBounded(abs, workspace.MaxReadSize)
		if err != nil {
			return [32]byte{}, err
		}
		return sha256.Sum256(raw), nil
	}
	snap, err := e.Workspace.ReadText(abs)
	if err != nil {
		return [32]byte{}, err
	}
	return hashText(snap.Text), nil
}
