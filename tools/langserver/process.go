package langserver

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/qwen-ls/qwen-ls/tools/procgroup"
)

// Process is a started language server as Options.Start returns it.
type Process interface {
	// Wait returns once the process has ended; it is called once.
	Wait() error
	// Kill ends the process and whatever it started, at once. It is
	// called when the server does not exit after shutdown and exit, and
	// once more after it has ended, to leave nothing behind; it must be
	// safe then.
	Kill() error
}

// startPlain starts cmd in a process group of its own, so that Kill
// takes whatever the server started too.
func startPlain(cmd *exec.Cmd) (Process, error) { return StartGrouped(cmd, nil) }

// StartGrouped starts cmd in a process group of its own, so that Kill
// takes whatever the server started too. wrap, when not nil, is called
// once the group is prepared and before the start, to put a supervisor
// around cmd; the function it returns, when not nil, is called right
// after the start, whether or not that succeeded.
func StartGrouped(cmd *exec.Cmd, wrap func(*exec.Cmd) (started func(), err error)) (Process, error) {
	procgroup.Prepare(cmd)
	var started func()
	if wrap != nil {
		var err error
		if started, err = wrap(cmd); err != nil {
			return nil, err
		}
	}
	err := cmd.Start()
	if started != nil {
		started()
	}
	if err != nil {
		return nil, err
	}
	if err := procgroup.Adopt(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	return &groupProcess{cmd: cmd}, nil
}

// groupProcess is a started language server and its process group.
type groupProcess struct {
	cmd *exec.Cmd
	// mu guards the two flags: after the process has ended, one more
	// Kill takes what it left in its group, and then the group is
	// released and never signalled again (its id may be reused).
	mu       sync.Mutex
	ended    bool
	released bool
}

func (p *groupProcess) Wait() error {
	err := p.cmd.Wait()
	p.mu.Lock()
	p.ended = true
	p.mu.Unlock()
	return err
}

func (p *groupProcess) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released {
		return nil
	}
	pid := p.cmd.Process.Pid
	procgroup.Terminate(pid)
	if p.ended {
		procgroup.Release(pid)
		p.released = true
	}
	return nil
}

// pipes are the three standard streams of a server: the child's ends go
// into exec.Cmd as files, so that any Options.Start (a sandbox wrapper
// too) hands them on unchanged.
type pipes struct {
	stdinR, stdinW   *os.File
	stdoutR, stdoutW *os.File
	stderrR, stderrW *os.File
}

func newPipes() (*pipes, error) {
	p := &pipes{}
	var err error
	if p.stdinR, p.stdinW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.stdoutR, p.stdoutW, err = os.Pipe(); err != nil {
		p.closeAll()
		return nil, err
	}
	if p.stderrR, p.stderrW, err = os.Pipe(); err != nil {
		p.closeAll()
		return nil, err
	}
	return p, nil
}

// closeChild closes the child's ends in this process once it has them.
func (p *pipes) closeChild() {
	for _, f := range []*os.File{p.stdinR, p.stdoutW, p.stderrW} {
		if f != nil {
			_ = f.Close()
		}
	}
}

func (p *pipes) closeAll() {
	p.closeChild()
	for _, f := range []*os.File{p.stdinW, p.stdoutR, p.stderrR} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// stdio is the server's stdout and stdin as one stream for jsonrpc2.
type stdio struct {
	r io.ReadCloser
	w io.WriteCloser
}

func (s stdio) Read(b []byte) (int, error)  { return s.r.Read(b) }
func (s stdio) Write(b []byte) (int, error) { return s.w.Write(b) }
func (s stdio) Close() error {
	werr := s.w.Close()
	rerr := s.r.Close()
	if werr != nil {
		return werr
	}
	return rerr
}

// tailSize is how much of a server's stderr is kept for a crash report.
const tailSize = 4096

// tail keeps the last tailSize bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
	// done is closed when the stream has ended.
	done chan struct{}
}

func newTail() *tail { return &tail{done: make(chan struct{})} }

func (t *tail) readFrom(r io.ReadCloser) {
	defer close(t.done)
	defer r.Close()
	b := make([]byte, 4096)
	for {
		n, err := r.Read(b)
		if n > 0 {
			t.mu.Lock()
			t.buf = append(t.buf, b[:n]...)
			if len(t.buf) > tailSize {
				t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
			}
			t.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// String is the kept text, from its first whole line.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	if len(t.buf) == tailSize {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return strings.TrimSpace(s)
}
