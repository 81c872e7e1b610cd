package rpc_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// Conformance case 1: an unknown tool gets the registry's suggestion.
func TestCase01_UnknownToolSuggests(t *testing.T) {
	a := startAgent(t, "default",
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "u", Name: "read_files", Arguments: "{}"}}},
		modeltest.Response{Text: "ok"})
	if _, err := a.prompt("go"); err != nil {
		t.Fatal(err)
	}
	want := `There is no tool named "read_files"; call tools by their exact registered names. Did you mean "read_file"`
	if msg := a.toolMessage(t, "u"); !strings.HasPrefix(msg, want) {
		t.Fatalf("tool message = %q", msg)
	}
}

// Conformance case 2: an alias runs the canonical tool, and the history
// keeps the name as called.
func TestCase02_AliasRunsTheToolAndHistoryKeepsTheName(t *testing.T) {
	a := startAgent(t, "default",
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "s", Name: "search_file_content", Arguments: `{"pattern":"needle"}`}}},
		modeltest.Response{Text: "ok"})
	os.WriteFile(filepath.Join(a.root, "f.txt"), []byte("a needle here\n"), 0o644)
	if _, err := a.prompt("go"); err != nil {
		t.Fatal(err)
	}
	if msg := a.toolMessage(t, "s"); !strings.HasPrefix(msg, `1 matching line for "needle" in the workspace:`) {
		t.Fatalf("tool message = %q", msg)
	}
	var called string
	for _, m := range a.model.Requests()[1].Messages {
		for _, tc := range m.ToolCalls {
			called = tc.Function.Name
		}
	}
	if called != "search_file_content" {
		t.Fatalf("history has %q, want the name as called", called)
	}
}

// Conformance case 4: a string boolean is repaired before validation.
func TestCase04_StringBooleanIsRepaired(t *testing.T) {
	a := startAgent(t, "yolo")
	p := filepath.Join(a.root, "a.txt")
	os.WriteFile(p, []byte("x x"), 0o644)
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "r", Name: "read_file", Arguments: jsonArgs("absolute_path", p)}}},
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "e", Name: "edit", Arguments: `{"file_path":"` + p + `","old_string":"x","new_string":"y","replace_all":"true"}`}}},
		modeltest.Response{Text: "ok"})
	if _, err := a.prompt("go"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); string(data) != "y y" {
		t.Fatalf("file = %q (tool said %q)", data, a.toolMessage(t, "e"))
	}
}

// Conformance case 5: in auto-edit, [web_fetch A, web_fetch B, write_file
// C, web_fetch D] against a server that holds A and B until both have
// arrived: A and B are in flight together, C runs after both ended, D
// after C; the tool messages keep the call order. (Were A and B run one
// after the other, A would be let go only by the guard, and the test
// fails on the count of fetches in flight.)
func TestCase05_ReadOnlyCallsOverlapOthersWait(t *testing.T) {
	var mu sync.Mutex
	inFlight, maxInFlight := 0, 0
	var events []string
	var cPath string
	bothArrived := make(chan struct{})
	arrived := map[string]bool{}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		_, cErr := os.Stat(cPath)
		mu.Lock()
		inFlight++
		maxInFlight = max(maxInFlight, inFlight)
		events = append(events, fmt.Sprintf("start %s (C written: %v)", name, cErr == nil))
		if (name == "A" || name == "B") && !arrived[name] {
			arrived[name] = true
			if arrived["A"] && arrived["B"] {
				close(bothArrived)
			}
		}
		mu.Unlock()
		if name == "A" || name == "B" {
			select {
			case <-bothArrived:
			case <-time.After(rpctest.DefaultTimeout):
				// Guard only: ends the wait of a fetch left alone.
			}
		}
		_, cErr = os.Stat(cPath)
		mu.Lock()
		inFlight--
		events = append(events, fmt.Sprintf("end %s (C written: %v)", name, cErr == nil))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "page %s", name)
	}))
	defer web.Close()
	a := startAgentWith(t, "auto-edit", rpc.Options{}, func(p *rpctest.InitParams) {
		opts := p.InitializationOptions.(map[string]any)
		opts["settings"] = map[string]any{"tools": map[string]any{"webFetch": map[string]any{"allowPrivateAddresses": true}}}
	})
	cPath = filepath.Join(a.root, "c.txt")
	// web_fetch's side request: answer with the page it was given.
	a.model.SetSide(func(r modeltest.Request) (modeltest.Response, bool) {
		if r.Stream || len(r.Tools) > 0 {
			return modeltest.Response{}, false
		}
		text := r.Messages[len(r.Messages)-1].Text()
		i := strings.Index(text, "page ")
		return modeltest.Response{Text: "summary of " + strings.Fields(text[i:])[1]}, true
	})
	fetch := func(id string) modeltest.ToolCall {
		return modeltest.ToolCall{ID: id, Name: "web_fetch", Arguments: jsonArgs("url", web.URL+"/"+id, "prompt", "summarise")}
	}
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{fetch("A"), fetch("B"),
			{ID: "C", Name: "write_file", Arguments: jsonArgs("file_path", cPath, "content", "c")}, fetch("D")}},
		modeltest.Response{Text: "done"})
	if _, err := a.prompt("go"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if maxInFlight != 2 {
		t.Errorf("at most %d fetches were in flight together, want A and B (2); events %v", maxInFlight, events)
	}
	want := []string{"start A (C written: false)", "start B (C written: false)", "end A (C written: false)", "end B (C written: false)",
		"start D (C written: true)", "end D (C written: true)"}
	got := append([]string(nil), events...)
	if len(got) == 6 && got[0] > got[1] { // A and B start in either order
		got[0], got[1] = got[1], got[0]
	}
	if len(got) == 6 && got[2] > got[3] {
		got[2], got[3] = got[3], got[2]
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events = %v\nwant    %v", events, want)
	}
	var ids []string
	for _, m := range a.model.Requests() {
		if !m.Stream {
			continue
		}
		for _, msg := range m.Messages {
			if msg.Role == "tool" {
				ids = append(ids, msg.ToolCallID)
			}
		}
	}
	if strings.Join(ids, ",") != "A,B,C,D" {
		t.Errorf("tool messages in order %v, want A,B,C,D", ids)
	}
	if msg := a.toolMessage(t, "A"); msg != "summary of A" {
		t.Errorf("A gave %q", msg)
	}
}

var _ = json.Marshal

// Conformance case 43 end to end: with private addresses allowed, an HTML
// page on a loopback server reaches the scripted model as Markdown in the
// side request, and the tool message is the model's answer; without the
// setting the fetch is refused before any request.
func TestCase43_WebFetchThroughTheScriptedModel(t *testing.T) {
	var hits int
	var mu sync.Mutex
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><script>var x=1</script></head><body><h1>Release notes</h1><ul><li>Faster <b>grep</b></li></ul><a href="/more">more</a></body></html>`)
	}))
	defer web.Close()

	refused := startAgent(t, "yolo",
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "f", Name: "web_fetch", Arguments: jsonArgs("url", web.URL+"/", "prompt", "what changed?")}}},
		modeltest.Response{Text: "ok"})
	if _, err := refused.prompt("fetch"); err != nil {
		t.Fatal(err)
	}
	if msg := refused.toolMessage(t, "f"); !strings.HasPrefix(msg, "Refusing to fetch "+web.URL+"/") || hits != 0 {
		t.Fatalf("without the setting: %q, %d requests reached the server", msg, hits)
	}

	a := startAgentWith(t, "yolo", rpc.Options{}, func(p *rpctest.InitParams) {
		opts := p.InitializationOptions.(map[string]any)
		opts["settings"] = map[string]any{"tools": map[string]any{"webFetch": map[string]any{"allowPrivateAddresses": true}}}
	})
	var side []modeltest.Request
	a.model.SetSide(func(r modeltest.Request) (modeltest.Response, bool) {
		if r.Stream {
			return modeltest.Response{}, false
		}
		side = append(side, r)
		return modeltest.Response{Text: "grep got faster"}, true
	})
	a.model.Push(
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "f", Name: "web_fetch", Arguments: jsonArgs("url", web.URL+"/", "prompt", "what changed?")}}},
		modeltest.Response{Text: "ok"})
	if _, err := a.prompt("fetch"); err != nil {
		t.Fatal(err)
	}
	if msg := a.toolMessage(t, "f"); msg != "grep got faster" {
		t.Fatalf("tool message = %q", msg)
	}
	if len(side) != 1 || len(side[0].Tools) != 0 {
		t.Fatalf("side requests = %d", len(side))
	}
	user := side[0].Messages[len(side[0].Messages)-1].Text()
	for _, want := range []string{"what changed?", web.URL, "# Release notes", "Faster **grep**"} {
		if !strings.Contains(user, want) {
			t.Errorf("the side request lacks %q:\n%s", want, user)
		}
	}
	if strings.Contains(user, "var x=1") {
		t.Errorf("a script reached the model:\n%s", user)
	}
}
