package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// MaxReadSize is the largest file a tool reads (10 MiB, tools.md §2.6).
const MaxReadSize = 10 << 20

// Source says where a text came from.
type Source int

const (
	FromDisk Source = iota
	FromBuffer
)

// Snapshot is the text of a file as tools see it (tools.md §2.3): the open
// buffer's unsaved text when there is one, else the disk's, decoded
// (DecodeFileText).
type Snapshot struct {
	Path   string
	Text   string
	Source Source
	// Version is the buffer version (FromBuffer).
	Version int32
	// ModTime and Size describe the file on disk (FromDisk), for the
	// read ledger's cheap "unchanged" check.
	ModTime time.Time
	Size    int64
	// Format is what a write must keep: BOM/charset and line endings.
	Format TextFormat
	// Raw is the file's bytes as read from disk (FromDisk only), for
	// type sniffing and media.
	Raw []byte
}

// NotRegularError says a path is a directory, or a FIFO, socket or device.
type NotRegularError struct {
	Path string
	Dir  bool
}

func (e *NotRegularError) Error() string {
	if e.Dir {
		return fmt.Sprintf("%s is a directory", e.Path)
	}
	return fmt.Sprintf("%s is not a regular file (it is a FIFO, socket or device)", e.Path)
}

// TooLargeError says a file is over MaxReadSize.
type TooLargeError struct {
	Path string
	Size int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is too large to read: %.2f MB", e.Path, float64(e.Size)/(1<<20))
}

// ReadText returns the current text of path: the open buffer when there is
// one, else the disk's content, decoded (tools.md §2.3, §2.5). A missing
// file gives an error matching fs.ErrNotExist; a directory, FIFO, socket
// or device a *NotRegularError (checked before opening, so a FIFO never
// blocks); a file over 10 MiB a *TooLargeError.
//
// ReadText does not check workspace membership: callers resolve the path
// first.
func (w *Workspace) ReadText(path string) (*Snapshot, error) {
	if b, ok := w.Overlay.Get(path); ok {
		return &Snapshot{Path: path, Text: b.Text, Source: FromBuffer, Version: b.Version,
			Format: TextFormat{CRLF: hasCRLF(b.Text)}}, nil
	}
	raw, fi, err := ReadFileBounded(path, MaxReadSize)
	if err != nil {
		return nil, err
	}
	return DiskSnapshot(path, raw, fi), nil
}

// DiskSnapshot is the Snapshot of a file read from disk: raw are its bytes
// and fi its metadata, as ReadFileBounded returns them. The text is
// decoded by DecodeFileText, so a file in a legacy charset keeps it in
// Format. Callers that read the bytes themselves (to sniff the file type
// before deciding to decode) build the snapshot with it.
func DiskSnapshot(path string, raw []byte, fi fs.FileInfo) *Snapshot {
	text, f := DecodeFileText(raw)
	s := &Snapshot{Path: path, Text: text, Source: FromDisk, Format: f, Raw: raw}
	if fi != nil {
		s.ModTime, s.Size = fi.ModTime(), fi.Size()
	}
	return s
}

// ReadFileBounded reads a regular file of at most max bytes, refusing
// directories and special files before opening them.
func ReadFileBounded(path string, max int64) ([]byte, fs.FileInfo, error) {
	return ReadFileBoundedIn(path, max, nil)
}

// ReadFileBoundedIn is ReadFileBounded that, once the file is open, checks
// its real path with allowed (see OpenedPath) and returns ErrEscaped
// without reading when allowed refuses it.
func ReadFileBoundedIn(path string, max int64, allowed func(real string) bool) ([]byte, fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if fi.IsDir() {
		return nil, fi, &NotRegularError{Path: path, Dir: true}
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, &NotRegularError{Path: path}
	}
	if fi.Size() > max {
		return nil, fi, &TooLargeError{Path: path, Size: fi.Size()}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fi, err
	}
	defer f.Close()
	if err := CheckOpened(f, allowed); err != nil {
		return nil, fi, err
	}
	// The file may have been swapped since the stat: it must still be a
	// regular file (a FIFO opened non-blocking reads as empty, never hangs).
	if ofi, err := f.Stat(); err != nil || !ofi.Mode().IsRegular() {
		return nil, fi, &NotRegularError{Path: path}
	}
	// Sized from the stat, with room for one more byte so that a file
	// that grew since is noticed without a second allocation.
	data, err := readAllSized(io.LimitReader(f, max+1), fi.Size()+1)
	if err != nil {
		return nil, fi, err
	}
	if int64(len(data)) > max {
		return nil, fi, &TooLargeError{Path: path, Size: int64(len(data))}
	}
	return data, fi, nil
}

// readAllSized reads r to the end into a buffer of initial capacity n.
func readAllSized(r io.Reader, n int64) ([]byte, error) {
	if n < 512 {
		n = 512
	}
	b := make([]byte, 0, n)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		k, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+k]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// IsNotExist reports whether err means the file does not exist.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

func hasCRLF(s string) bool {
	for i := 1; i < len(s); i++ {
		if s[i] == '\n' && s[i-1] == '\r' {
			return true
		}
	}
	return false
}
