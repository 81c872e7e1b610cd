package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// bytesBench counts the bytes an agent sends to the model over a scripted
// 10-step task (ten tool calls, then an answer), and the share of
// qwen-ls's request bytes that sits inside a cacheable prefix on a
// DashScope-shaped endpoint. qwen-ls talks to DashScope's real host name
// through an HTTP proxy on loopback (the scripted model), so it shapes its
// requests as for DashScope (cache_control marks, its header) while
// nothing leaves the machine. Qwen Code, when installed, runs the same
// task against the same script.
func bytesBench(b *bench) error {
	if b.bin == "" {
		b.bin = filepath.Join(b.tmp, "qwen-ls")
		if err := b.goCmd("build", "-o", b.bin, "./cmd/qwen-ls"); err != nil {
			return err
		}
	}
	ws, home, err := bytesWorkspace(b.tmp)
	if err != nil {
		return err
	}
	srv, err := modeltest.NewServer()
	if err != nil {
		return err
	}
	defer srv.Close()
	srv.SetSide(func(r modeltest.Request) (modeltest.Response, bool) {
		// Side queries (no tools) are answered without using the script.
		return modeltest.Response{Text: "ok"}, len(r.Tools) == 0
	})
	srv.Push(bytesScript(ws)...)
	u, _ := url.Parse(srv.URL)
	env := append(cleanEnv(), "HOME="+home, "OPENAI_API_KEY=sk-bench", "OPENAI_MODEL=qwen3-coder-plus",
		"OPENAI_BASE_URL=http://dashscope.aliyuncs.com/compatible-mode/v1", "HTTP_PROXY=http://"+u.Host, "http_proxy=http://"+u.Host, "NO_PROXY=", "no_proxy=")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.bin, "exec", "--approval-mode", "yolo", "--cwd", ws, "-p", "Look around the project and summarise it.")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("qwen-ls exec: %v\n%s", err, out)
	}
	reqs := srv.Requests()
	if srv.Remaining() != 0 {
		return fmt.Errorf("qwen-ls exec left %d scripted answers unused", srv.Remaining())
	}
	ours := cacheUse(reqs)
	if ours.marked == 0 {
		return fmt.Errorf("no request carried DashScope's cache marks: the endpoint was not taken for DashScope")
	}
	b.logf("qwen-ls: %d requests (%d with DashScope's cache marks), %d bytes, of them %d prompt bytes (tools and messages), %d read from the cache",
		ours.requests, ours.marked, ours.body, ours.prompt, ours.cached)

	bytesRow := row{section: "model bytes", what: "bytes sent to the model, scripted 10-step task", ours: float64(ours.body) / 1000, unit: "KB",
		peer: "qwen -p", target: "at most 0.5× Qwen Code's", ratioLimit: 0.5}
	shareRow := row{section: "model bytes", what: "share of the prompt bytes read from DashScope's cache", ours: ours.share(), unit: "share",
		text: fmt.Sprintf("%.1f%%", ours.share()), target: "at least 90%", limited: true, atLeast: true, limit: 90}
	fullRow := row{section: "model bytes", what: "prompt bytes billed at the full price (not read from the cache)", ours: float64(ours.prompt-ours.cached) / 1000, unit: "KB",
		peer: "qwen -p", target: "at most Qwen Code's", ratioLimit: 1}
	if b.peers.qwen == "" {
		for _, r := range []*row{&bytesRow, &fullRow} {
			r.peerMissing, r.peerHint = true, "npm install --prefix .peers @qwen-code/qwen-code"
		}
	} else if theirs, err := qwenBytes(b, ws, home); err != nil {
		b.logf("Qwen Code: %v", err)
		for _, r := range []*row{&bytesRow, &fullRow} {
			r.peerMissing, r.peerHint = true, "its run failed: "+firstLine(err.Error())
		}
	} else {
		b.logf("Qwen Code: %d requests (%d with DashScope's cache marks), %d bytes, of them %d prompt bytes, %d read from the cache (%.1f%%)",
			theirs.requests, theirs.marked, theirs.body, theirs.prompt, theirs.cached, theirs.share())
		bytesRow.peerValue = float64(theirs.body) / 1000
		shareRow.peer, shareRow.peerValue = "qwen -p", theirs.share()
		fullRow.peerValue = float64(theirs.prompt-theirs.cached) / 1000
	}
	b.add(bytesRow)
	b.add(shareRow)
	b.add(row{section: "model bytes", what: "the same, after the first request (which writes the cache)", ours: ours.laterShare(),
		text: fmt.Sprintf("%.1f%%", ours.laterShare()), target: "—"})
	b.add(fullRow)
	return nil
}

// cacheStats is how an agent's requests of one task use DashScope's
// explicit cache.
type cacheStats struct {
	requests, marked int
	body             int // every byte of every request body
	prompt           int // the bytes a prompt cache can hold: tools and messages
	firstPrompt      int
	cached           int // prompt bytes read from the cache the previous request wrote
}

func cacheUse(reqs []modeltest.Request) cacheStats {
	var st cacheStats
	var prev *cacheView
	for _, r := range reqs {
		st.requests++
		st.body += len(r.Body)
		if r.Header.Get("X-DashScope-CacheControl") == "enable" && bytes.Contains(r.Body, []byte(`"cache_control"`)) {
			st.marked++
		}
		v := viewOf(r.Body)
		if v == nil {
			continue
		}
		p := v.promptSize()
		if prev == nil {
			st.firstPrompt = p
		}
		st.prompt += p
		st.cached += v.cachedAfter(prev)
		prev = v
	}
	return st
}

// share is the percentage of the prompt bytes read from the cache. The
// request's envelope (model name, stream options, metadata) is not part
// of any prompt, and no cache can hold it.
func (st cacheStats) share() float64 {
	if st.prompt == 0 {
		return 0
	}
	return 100 * float64(st.cached) / float64(st.prompt)
}

// laterShare leaves out the first request, which can only write the cache.
func (st cacheStats) laterShare() float64 {
	if st.prompt == st.firstPrompt {
		return 0
	}
	return 100 * float64(st.cached) / float64(st.prompt-st.firstPrompt)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// cleanEnv is the environment without any model or proxy settings.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "OPENAI_"), strings.HasPrefix(k, "DASHSCOPE_"), strings.HasPrefix(strings.ToUpper(k), "HTTP_PROXY"),
			strings.HasPrefix(strings.ToUpper(k), "HTTPS_PROXY"), strings.ToUpper(k) == "NO_PROXY", k == "HOME":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// qwenBytes runs Qwen Code's CLI on the same task. Qwen Code takes any
// base URL that mentions DashScope's host name for DashScope, so a path
// on the loopback server gets its DashScope requests (cache marks and
// header) without a proxy.
func qwenBytes(b *bench, ws, home string) (cacheStats, error) {
	srv, err := modeltest.NewServer()
	if err != nil {
		return cacheStats{}, err
	}
	defer srv.Close()
	srv.SetSide(func(r modeltest.Request) (modeltest.Response, bool) {
		return modeltest.Response{Text: "ok"}, len(r.Tools) == 0
	})
	srv.Push(bytesScript(ws)...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.peers.qwen, "--auth-type", "openai", "--openai-base-url", srv.URL+"/dashscope.aliyuncs.com/compatible-mode/v1",
		"--openai-api-key", "sk-bench", "-m", "qwen3-coder-plus", "--yolo", "-p", "Look around the project and summarise it.")
	cmd.Dir = ws
	cmd.Env = append(cleanEnv(), "HOME="+home)
	if out, err := cmd.CombinedOutput(); err != nil {
		return cacheStats{}, fmt.Errorf("qwen -p: %v\n%s", err, out)
	}
	if srv.Remaining() != 0 {
		return cacheStats{}, fmt.Errorf("qwen -p left %d scripted answers unused", srv.Remaining())
	}
	return cacheUse(srv.Requests()), nil
}

// bytesWorkspace writes a small Go project and a home with Qwen Code's
// quiet settings.
func bytesWorkspace(tmp string) (ws, home string, err error) {
	ws, home = filepath.Join(tmp, "bytes-ws"), filepath.Join(tmp, "bytes-home")
	files := map[string]string{
		"go.mod":              "module example.com/shop\n\ngo 1.22\n",
		"main.go":             "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(Total([]Item{{\"pen\", 2, 150}, {\"book\", 1, 1200}}))\n}\n",
		"cart.go":             "package main\n\n// Item is one line of a cart.\ntype Item struct {\n\tName  string\n\tCount int\n\tCents int\n}\n\n// Total sums a cart in cents.\nfunc Total(items []Item) int {\n\tt := 0\n\tfor _, it := range items {\n\t\tt += it.Count * it.Cents\n\t}\n\treturn t\n}\n",
		"cart_test.go":        "package main\n\nimport \"testing\"\n\nfunc TestTotal(t *testing.T) {\n\tif got := Total([]Item{{\"a\", 2, 3}}); got != 6 {\n\t\tt.Fatal(got)\n\t}\n}\n",
		"README.md":           "# shop\n\nA tiny cart. Run `go test`.\n",
		"internal/tax/tax.go": "package tax\n\n// Rate is the VAT rate in percent.\nconst Rate = 20\n\n// Add adds VAT to cents.\nfunc Add(cents int) int { return cents * (100 + Rate) / 100 }\n",
	}
	for name, text := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", "", err
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return "", "", err
		}
	}
	if err := os.MkdirAll(filepath.Join(home, ".qwen"), 0o755); err != nil {
		return "", "", err
	}
	settings := `{"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"general":{"enableAutoUpdate":false,"disableAutoUpdate":true,"disableUpdateNag":true}}`
	return ws, home, os.WriteFile(filepath.Join(home, ".qwen", "settings.json"), []byte(settings), 0o644)
}

// bytesScript is the task: ten calls of the read-only tools both agents
// share, then an answer.
func bytesScript(ws string) []modeltest.Response {
	call := func(name, args string) modeltest.Response {
		return modeltest.Response{ToolCalls: []modeltest.ToolCall{{Name: name, Arguments: args}}, Usage: &modeltest.Usage{Prompt: 1000, Completion: 20}}
	}
	path := func(p string) string { q, _ := json.Marshal(filepath.Join(ws, p)); return string(q) }
	return []modeltest.Response{
		call("list_directory", `{"path":`+path(".")+`}`),
		call("read_file", `{"absolute_path":`+path("README.md")+`}`),
		call("read_file", `{"absolute_path":`+path("main.go")+`}`),
		call("glob", `{"pattern":"**/*.go"}`),
		call("read_file", `{"absolute_path":`+path("cart.go")+`}`),
		call("grep_search", `{"pattern":"func Total"}`),
		call("read_file", `{"absolute_path":`+path("cart_test.go")+`}`),
		call("list_directory", `{"path":`+path("internal/tax")+`}`),
		call("read_file", `{"absolute_path":`+path("internal/tax/tax.go")+`}`),
		call("grep_search", `{"pattern":"Rate"}`),
		{Text: "A small Go cart with a total, a test and a VAT helper.", Usage: &modeltest.Usage{Prompt: 1000, Completion: 20}},
	}
}

// cacheView is a request as DashScope's explicit cache sees it: the tools
// and the messages, each with its text only (a cache mark changes a
// string content into a part, not the tokens).
type cacheView struct {
	tools    string
	messages []string
	sizes    []int // each message's bytes in the body
	toolSize int
}

// promptSize is the bytes of the tools and the messages.
func (v *cacheView) promptSize() int {
	n := v.toolSize
	for _, s := range v.sizes {
		n += s
	}
	return n
}

func viewOf(body []byte) *cacheView {
	var r struct {
		Tools    json.RawMessage   `json:"tools"`
		Messages []json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(body, &r) != nil {
		return nil
	}
	v := &cacheView{tools: string(stripMarks(r.Tools)), toolSize: len(r.Tools)}
	for _, m := range r.Messages {
		v.messages = append(v.messages, string(stripMarks(m)))
		v.sizes = append(v.sizes, len(m))
	}
	return v
}

// stripMarks re-encodes a JSON value with cache_control removed and
// one-part text contents turned back into strings.
func stripMarks(raw json.RawMessage) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			delete(t, "cache_control")
			if parts, ok := t["content"].([]any); ok && len(parts) == 1 {
				if p, ok := parts[0].(map[string]any); ok && p["type"] == "text" {
					t["content"] = p["text"]
				}
			}
			for k, e := range t {
				t[k] = walk(e)
			}
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
		}
		return x
	}
	out, _ := json.Marshal(walk(v))
	return out
}

// cachedAfter is how many of v's bytes DashScope can read from the cache
// that prev's marks wrote: the tools (marked on the last tool) when they
// are the same, and the messages up to prev's marked latest message when
// v starts with all of prev's messages (else up to its system message).
func (v *cacheView) cachedAfter(prev *cacheView) int {
	if prev == nil || v.tools != prev.tools {
		return 0
	}
	n := 0
	for n < len(prev.messages) && n < len(v.messages) && v.messages[n] == prev.messages[n] {
		n++
	}
	switch {
	case n == len(prev.messages):
	case n >= 1:
		n = 1 // the system message's mark
	default:
		return 0
	}
	total := v.toolSize
	for _, s := range v.sizes[:n] {
		total += s
	}
	return total
}
