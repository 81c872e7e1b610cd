package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// bigBench measures what one big input costs a real server (issue 30,
// item 9): a 50 MB didOpen, a 50 MB model answer, an LSP body of exactly
// 64 MiB (a whole-text didChange) and a 70 MB ACP line (over the limit,
// refused). For each, a fresh qwenbench build of the server: its idle
// RSS, its peak RSS (VmHWM) while it takes the input, its RSS b.hold later
// with nothing else happening, and then its live Go heap (SIGUSR1, which
// collects garbage first, so it is read after the RSS). For the LSP
// inputs, also how long a small request sent right behind the input waits
// for its answer (qwen/listTools, which touches no document).
func bigBench(b *bench) error {
	home := filepath.Join(b.tmp, "big-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	env := append(os.Environ(), "HOME="+home, "QWEN_HOME="+filepath.Join(home, ".qwen"))
	for _, c := range []struct {
		name  string
		input int // bytes
		live  int // bytes the server must still hold afterwards
		wait  bool
		run   func(b *bench, env []string, c *bigRun) error
	}{
		{"50 MB didOpen", 50_000_000, 50_000_000, true, bigDidOpen},
		{"50 MB model answer", 50_000_000, 50_000_000, false, bigAnswer},
		{"64 MiB LSP body (whole-text didChange)", 64 << 20, 64 << 20, true, bigBody},
		{"70 MB ACP line (refused)", 70_000_000, 0, false, bigACPLine},
	} {
		r := &bigRun{input: c.input}
		if err := c.run(b, env, r); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		in := float64(c.input) / 1e6
		b.logf("big: %s: idle %.1f MB, peak %.1f MB (%.2f× the input), %v later %.1f MB (live heap then %.1f MB), request waited %v",
			c.name, mb(r.idleKB), mb(r.peakKB), mb(r.peakKB)/in, b.hold, mb(r.heldKB), mb(r.heapKB), r.wait.Round(time.Millisecond))
		sec := "big input: " + c.name
		peakLimit := 3 * in
		b.add(row{section: sec, what: fmt.Sprintf("peak RSS (input %.1f MB)", in), ours: mb(r.peakKB), unit: "MB",
			target: fmt.Sprintf("≤ %.0f MB (3× input)", peakLimit), limit: peakLimit, limited: true, inclusive: true})
		heldLimit := mb(r.idleKB) + float64(c.live)/1e6 + 10
		b.add(row{section: sec, what: fmt.Sprintf("RSS %v later (idle %.1f MB, live %.0f MB; heap then %.1f MB)", b.hold, mb(r.idleKB), float64(c.live)/1e6, mb(r.heapKB)),
			ours: mb(r.heldKB), unit: "MB", target: fmt.Sprintf("≤ %.0f MB (idle + live + 10)", heldLimit), limit: heldLimit, limited: true, inclusive: true})
		if c.wait {
			b.add(row{section: sec, what: "a small request sent right behind it waits", ours: millis(r.wait), unit: "ms", target: "—"})
		}
	}
	return nil
}

// bigRun is what one big-input run measured.
type bigRun struct {
	input                          int
	idleKB, peakKB, heldKB, heapKB int
	wait                           time.Duration
}

// settle reads the idle RSS of a server that has just started.
func (r *bigRun) idle(pid int) error {
	time.Sleep(300 * time.Millisecond)
	st, err := procStatus(pid)
	if err != nil {
		return err
	}
	r.idleKB = st["VmRSS"]
	return nil
}

// after reads the peak at once, the RSS hold later, and then the live
// heap from the qwenbench build's answer to SIGUSR1.
func (r *bigRun) after(b *bench, p *os.Process, debug <-chan string) error {
	st, err := procStatus(p.Pid)
	if err != nil {
		return err
	}
	r.peakKB = st["VmHWM"]
	time.Sleep(b.hold)
	if st, err = procStatus(p.Pid); err != nil {
		return err
	}
	r.heldKB = st["VmRSS"]
	r.peakKB = max(r.peakKB, st["VmHWM"])
	for len(debug) > 0 {
		<-debug
	}
	if err := askDebug(p); err != nil {
		return err
	}
	select {
	case line := <-debug:
		var g, heap int
		if _, err := fmt.Sscanf(line, "goroutines %d heap %d", &g, &heap); err != nil {
			return fmt.Errorf("the server said %q", line)
		}
		r.heapKB = heap / 1024
	case <-time.After(10 * time.Second):
		return fmt.Errorf("no heap figure from the server")
	}
	return nil
}

// sourceText returns about n bytes of Go-like source: tabs, quotes and
// line breaks, which JSON escapes, as a real file has.
func sourceText(n int) []byte {
	var sb bytes.Buffer
	sb.Grow(n + 100)
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "\tfmt.Printf(\"line %%d: %%s\\n\", %d, strings.Repeat(\"ab\", %d)) // ünïcödé\n", i, i%17)
	}
	return sb.Bytes()[:n]
}

// jsonString is s as a JSON string, without HTML escaping.
func jsonString(s []byte) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(string(s))
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// sendFrame writes one LSP frame with body as it is.
func (s *server) sendFrame(body []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := fmt.Fprintf(s.in, "Content-Length: %d\r\n\r\n", len(body)); err != nil {
		return err
	}
	_, err := s.in.Write(body)
	return err
}

// timedSmallRequest sends qwen/listTools and returns how long its answer
// took.
func (s *server) timedSmallRequest() (time.Duration, error) {
	start := time.Now()
	if _, err := s.call("qwen/listTools", map[string]any{}, 2*time.Minute); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func startBigLSP(b *bench, env []string, r *bigRun) (*server, string, error) {
	root, err := os.MkdirTemp(b.tmp, "big-root")
	if err != nil {
		return nil, "", err
	}
	srv, err := startServer(b.debugBin, env)
	if err != nil {
		return nil, "", err
	}
	if err := srv.initialize(root, nil); err != nil {
		_ = srv.stop()
		return nil, "", err
	}
	if err := r.idle(srv.pid()); err != nil {
		_ = srv.stop()
		return nil, "", err
	}
	return srv, root, nil
}

func didOpenBody(uri string, text []byte) []byte {
	var body bytes.Buffer
	body.WriteString(`{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":`)
	body.Write(jsonString([]byte(uri)))
	body.WriteString(`,"languageId":"go","version":1,"text":`)
	body.Write(jsonString(text))
	body.WriteString(`}}}`)
	return body.Bytes()
}

func bigDidOpen(b *bench, env []string, r *bigRun) (err error) {
	srv, root, err := startBigLSP(b, env, r)
	if err != nil {
		return err
	}
	defer func() {
		if serr := srv.stop(); err == nil {
			err = serr
		}
	}()
	body := didOpenBody("file://"+filepath.Join(root, "big.go"), sourceText(r.input))
	if err := srv.sendFrame(body); err != nil {
		return err
	}
	body = nil
	if r.wait, err = srv.timedSmallRequest(); err != nil {
		return err
	}
	return r.after(b, srv.cmd.Process, srv.debug)
}

// bigBody opens a small document, then replaces its whole text with a
// didChange whose body is exactly 64 MiB, the largest the server accepts.
func bigBody(b *bench, env []string, r *bigRun) (err error) {
	srv, root, err := startBigLSP(b, env, r)
	if err != nil {
		return err
	}
	defer func() {
		if serr := srv.stop(); err == nil {
			err = serr
		}
	}()
	uri := "file://" + filepath.Join(root, "big.go")
	if err := srv.sendFrame(didOpenBody(uri, []byte("package big\n"))); err != nil {
		return err
	}
	head := []byte(`{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":` + string(jsonString([]byte(uri))) + `,"version":2},"contentChanges":[{"text":`)
	tail := []byte(`}]}}`)
	// The text's JSON is longer than the text (escapes): size the text
	// from a sample's ratio, a little short, and pad the rest.
	sample := sourceText(1 << 20)
	room := r.input - len(head) - len(tail)
	text := jsonString(sourceText(int(float64(room)*float64(len(sample))/float64(len(jsonString(sample)))) - 64<<10))
	pad := r.input - len(head) - len(tail) - len(text)
	body := make([]byte, 0, r.input)
	body = append(body, head...)
	body = append(body, text[:len(text)-1]...)
	body = append(body, bytes.Repeat([]byte("x"), pad)...)
	body = append(body, '"')
	body = append(body, tail...)
	if len(body) != r.input {
		return fmt.Errorf("built a body of %d bytes, not %d", len(body), r.input)
	}
	text = nil
	if err := srv.sendFrame(body); err != nil {
		return err
	}
	body = nil
	if r.wait, err = srv.timedSmallRequest(); err != nil {
		return err
	}
	return r.after(b, srv.cmd.Process, srv.debug)
}

// bigAnswer has the scripted model answer a prompt with 50 MB of text,
// streamed in 4 KiB pieces.
func bigAnswer(b *bench, env []string, r *bigRun) (err error) {
	model, err := modeltest.NewServer()
	if err != nil {
		return err
	}
	defer model.Close()
	model.Push(modeltest.Response{Text: string(sourceText(r.input)), ChunkSize: 4 << 10})
	root, err := os.MkdirTemp(b.tmp, "big-root")
	if err != nil {
		return err
	}
	srv, err := startServer(b.debugBin, env)
	if err != nil {
		return err
	}
	defer func() {
		if serr := srv.stop(); err == nil {
			err = serr
		}
	}()
	if err := srv.initialize(root, map[string]any{"model": map[string]any{"name": "scripted", "baseUrl": model.URL, "apiKey": "sk-test"}}); err != nil {
		return err
	}
	res, err := srv.call("qwen/newSession", map[string]any{}, 30*time.Second)
	if err != nil {
		return err
	}
	var ns struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &ns); err != nil || ns.SessionID == "" {
		return fmt.Errorf("qwen/newSession = %s (%v)", res, err)
	}
	if err := r.idle(srv.pid()); err != nil {
		return err
	}
	res, err = srv.call("qwen/prompt", map[string]any{"sessionId": ns.SessionID,
		"prompt": []any{map[string]any{"type": "text", "text": "say a lot"}}}, 5*time.Minute)
	if err != nil {
		return err
	}
	if !strings.Contains(string(res), "end_turn") {
		return fmt.Errorf("qwen/prompt = %s", res)
	}
	return r.after(b, srv.cmd.Process, srv.debug)
}

// bigACPLine sends an ACP server one line of 70 MB (a session/prompt over
// the 64 MiB limit), waits for its refusal, and checks that the server
// still answers.
func bigACPLine(b *bench, env []string, r *bigRun) (err error) {
	root, err := os.MkdirTemp(b.tmp, "big-root")
	if err != nil {
		return err
	}
	cmd := exec.Command(b.debugBin, "--acp")
	cmd.Env = env
	cmd.Dir = root
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	debug := make(chan string, 16)
	go (&server{debug: debug}).stderrLoop(errPipe)
	lines := make(chan []byte, 64)
	go func() {
		defer close(lines)
		br := bufio.NewReaderSize(out, 1<<16)
		for {
			l, err := br.ReadBytes('\n')
			if len(l) > 0 && len(l) < 1<<20 {
				lines <- l
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	// answer waits for the message with this id ("null" for a refusal).
	answer := func(id string) (map[string]json.RawMessage, error) {
		timeout := time.After(2 * time.Minute)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					return nil, fmt.Errorf("the server closed its output")
				}
				var m map[string]json.RawMessage
				if json.Unmarshal(l, &m) == nil && m["method"] == nil && string(m["id"]) == id {
					return m, nil
				}
			case <-timeout:
				return nil, fmt.Errorf("no answer with id %s", id)
			}
		}
	}
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`+"\n"); err != nil {
		return err
	}
	if _, err := answer("1"); err != nil {
		return err
	}
	if err := r.idle(cmd.Process.Pid); err != nil {
		return err
	}
	head := []byte(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"none","prompt":[{"type":"text","text":`)
	line := append(head, jsonString(sourceText(r.input-len(head)-8))...)
	line = append(line, "}]}}\n"...)
	go func() {
		_, _ = in.Write(line)
		_, _ = io.WriteString(in, `{"jsonrpc":"2.0","id":3,"method":"session/list","params":{}}`+"\n")
	}()
	m, err := answer("null")
	if err != nil {
		return err
	}
	if !strings.Contains(string(m["error"]), "-32600") {
		return fmt.Errorf("the refusal is %s", m["error"])
	}
	if _, err := answer("3"); err != nil {
		return err
	}
	line = nil
	return r.after(b, cmd.Process, debug)
}
