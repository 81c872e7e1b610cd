package rpc_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/tools/procgroup"
)

// goTerminals is a client's terminal service in Go: each terminal is a
// real process in its own group.
type goTerminals struct {
	mu    sync.Mutex
	terms map[string]*goTerminal
	calls []string
}

type goTerminal struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan struct{}
}

func (g *goTerminals) answer(method string, params json.RawMessage) any {
	var p struct {
		TerminalID string   `json:"terminalId"`
		Command    string   `json:"command"`
		Args       []string `json:"args"`
		Cwd        string   `json:"cwd"`
	}
	json.Unmarshal(params, &p)
	g.mu.Lock()
	g.calls = append(g.calls, method)
	if g.terms == nil {
		g.terms = map[string]*goTerminal{}
	}
	term := g.terms[p.TerminalID]
	g.mu.Unlock()
	switch method {
	case "session/request_permission":
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_once"}}
	case "terminal/create":
		cmd := exec.Command(p.Command, p.Args...)
		cmd.Dir = p.Cwd
		procgroup.Prepare(cmd)
		t := &goTerminal{cmd: cmd, done: make(chan struct{})}
		cmd.Stdout, cmd.Stderr = &syncWriter{w: &t.out, mu: &g.mu}, &syncWriter{w: &t.out, mu: &g.mu}
		if err := cmd.Start(); err != nil {
			return acpError{-32603, err.Error()}
		}
		_ = procgroup.Adopt(cmd.Process.Pid)
		go func() { cmd.Wait(); close(t.done) }()
		g.mu.Lock()
		id := fmt.Sprintf("t%d", len(g.terms)+1)
		g.terms[id] = t
		g.mu.Unlock()
		return map[string]any{"terminalId": id}
	}
	if term == nil {
		return acpError{-32602, "unknown terminal " + p.TerminalID}
	}
	status := func() map[string]any {
		st := term.cmd.ProcessState
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return map[string]any{"exitCode": nil, "signal": ws.Signal().String()}
		}
		return map[string]any{"exitCode": st.ExitCode(), "signal": nil}
	}
	switch method {
	case "terminal/wait_for_exit":
		<-term.done
		return status()
	case "terminal/output":
		g.mu.Lock()
		out := term.out.String()
		g.mu.Unlock()
		res := map[string]any{"output": out, "truncated": false}
		select {
		case <-term.done:
			res["exitStatus"] = status()
		default:
		}
		return res
	case "terminal/kill", "terminal/release":
		killGroup(term.cmd.Process.Pid)
		return map[string]any{}
	}
	return acpError{-32601, method}
}

type syncWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// A command that outlives its timeout in the client's terminal is killed
// there, and the model reads the timeout, the output so far and how the
// command ended; the terminal is released.
func TestACPTerminalTimeout(t *testing.T) {
	m := modeltest.Start(t)
	c := startACP(t, m.URL)
	g := &goTerminals{}
	// Answers run on the client's read loop; wait_for_exit blocks, so it
	// is answered from its own goroutine like a real client would.
	c.answer = g.answer
	c.async = true
	sid, _ := acpSession(t, c, map[string]any{"terminal": true})
	m.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "s", Name: "run_shell_command", Arguments: `{"command":"echo started; sleep 30","timeout":1000}`}}},
		modeltest.Response{Text: "ok"},
	)
	res := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "run"}}})
	if string(res["stopReason"]) != `"end_turn"` {
		t.Fatalf("stopReason = %s", res["stopReason"])
	}
	got := toolMessageOf(t, m, "s")
	for _, want := range []string{"started", "ran past its 1000 ms timeout", "Signal: killed", "Exit Code: (none)"} {
		if !strings.Contains(got, want) {
			t.Fatalf("the model was told %q, want it to contain %q", got, want)
		}
	}
	g.mu.Lock()
	calls := strings.Join(g.calls, " ")
	g.mu.Unlock()
	if !strings.Contains(calls, "terminal/create") || !strings.Contains(calls, "terminal/kill") || !strings.HasSuffix(calls, "terminal/release") {
		t.Fatalf("terminal requests = %s", calls)
	}
}
