package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
)

// server is one qwen-ls process driven over stdio as an editor would:
// Content-Length framed JSON-RPC, requests from the server answered with
// null, notifications counted and dropped (a soak sends thousands).
type server struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	started time.Time

	wmu sync.Mutex
	mu  sync.Mutex
	// pending maps request ids to the channel awaiting the answer.
	pending map[int]chan rpcMessage
	next    int
	notes   int
	done    chan struct{}
	// stderr lines starting with "qwen-ls-bench:" (the qwenbench build's
	// answers to SIGUSR1) arrive here.
	debug chan string
}

type rpcMessage struct {
	ID     *json.RawMessage `json:"id,omitempty"`
	Method string           `json:"method,omitempty"`
	Params json.RawMessage  `json:"params,omitempty"`
	Result json.RawMessage  `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startServer starts bin --stdio with env added to the environment.
func startServer(bin string, env []string) (*server, error) {
	cmd := exec.Command(bin, "--stdio")
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, in: in, pending: map[int]chan rpcMessage{}, done: make(chan struct{}), debug: make(chan string, 16)}
	s.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go s.readLoop(bufio.NewReaderSize(out, 1<<16))
	go s.stderrLoop(errPipe)
	return s, nil
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// notifications is how many notifications the server has sent so far.
func (s *server) notifications() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notes
}

func (s *server) stderrLoop(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "qwen-ls-bench:"); ok {
			select {
			case s.debug <- strings.TrimSpace(rest):
			default:
			}
		}
	}
}

func (s *server) readLoop(r *bufio.Reader) {
	defer func() {
		s.mu.Lock()
		for id, ch := range s.pending {
			close(ch)
			delete(s.pending, id)
		}
		s.mu.Unlock()
		close(s.done)
	}()
	for {
		body, err := rpctest.ReadFrame(r)
		if err != nil {
			return
		}
		var m rpcMessage
		if json.Unmarshal(body, &m) != nil {
			continue
		}
		switch {
		case m.Method != "" && m.ID != nil:
			// A request from the server: answer null, off the read loop.
			go s.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": nil})
		case m.Method != "":
			s.mu.Lock()
			s.notes++
			s.mu.Unlock()
		case m.ID != nil:
			id, err := strconv.Atoi(string(*m.ID))
			if err != nil {
				continue
			}
			s.mu.Lock()
			ch := s.pending[id]
			delete(s.pending, id)
			s.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
}

func (s *server) send(v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err = fmt.Fprintf(s.in, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return err
}

func (s *server) notify(method string, params any) error {
	return s.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// call sends a request and waits for its answer, at most timeout.
func (s *server) call(method string, params any, timeout time.Duration) (json.RawMessage, error) {
	ch := make(chan rpcMessage, 1)
	s.mu.Lock()
	s.next++
	id := s.next
	s.pending[id] = ch
	s.mu.Unlock()
	if err := s.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: the server stopped", method)
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: error %d: %s", method, m.Error.Code, m.Error.Message)
		}
		return m.Result, nil
	case <-time.After(timeout):
		return nil, fmt.Errorf("%s: no answer in %v", method, timeout)
	}
}

// initialize sends initialize (and initialized) for one root.
func (s *server) initialize(root string, options map[string]any) error {
	params := map[string]any{
		"processId": nil,
		"capabilities": map[string]any{
			"window":       map[string]any{"workDoneProgress": true},
			"workspace":    map[string]any{"workspaceFolders": true},
			"general":      map[string]any{"positionEncodings": []string{"utf-8", "utf-16"}},
			"experimental": map[string]any{"qwen": map[string]any{"sessionUpdates": true, "requestPermission": true}},
		},
		"workspaceFolders": []map[string]any{{"uri": "file://" + root, "name": "bench"}},
	}
	if options != nil {
		params["initializationOptions"] = options
	}
	if _, err := s.call("initialize", params, 30*time.Second); err != nil {
		return err
	}
	return s.notify("initialized", map[string]any{})
}

// stop asks the server to shut down and exit, and kills it when it does
// not within a few seconds.
func (s *server) stop() error {
	_, err := s.call("shutdown", nil, 10*time.Second)
	_ = s.notify("exit", nil)
	_ = s.in.Close()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		err = errors.Join(err, errors.New("the server did not exit; killed"))
	}
	werr := s.cmd.Wait()
	if err == nil && werr != nil {
		err = werr
	}
	return err
}
