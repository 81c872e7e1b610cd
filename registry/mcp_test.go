package registry

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// The tests of this file and discovery_test.go run real processes: the MCP
// server of testdata/mcpserver, built once, and the bash scripts of
// testdata. They wait on what the code reports (logs, statuses, files),
// never on the clock; waitFor's deadline only keeps a broken test from
// hanging.

var (
	serverBinOnce sync.Once
	serverBin     string
	serverBinErr  error
	serverBinDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if serverBinDir != "" {
		os.RemoveAll(serverBinDir)
	}
	os.Exit(code)
}

// mcpServerBin builds testdata/mcpserver once per test run.
func mcpServerBin(t *testing.T) string {
	t.Helper()
	serverBinOnce.Do(func() {
		serverBinDir, serverBinErr = os.MkdirTemp("", "qwen-ls-mcpserver-")
		if serverBinErr != nil {
			return
		}
		serverBin = filepath.Join(serverBinDir, "mcpserver")
		out, err := exec.Command("go", "build", "-o", serverBin, "./testdata/mcpserver").CombinedOutput()
		if err != nil {
			serverBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if serverBinErr != nil {
		t.Fatal(serverBinErr)
	}
	return serverBin
}

// testEnv is one workspace with a registry and its Sources.
type testEnv struct {
	t   *testing.T
	dir string
	ws  *workspace.Workspace
	env *tools.Env
	reg *Registry
	src *Sources

	// mu guards logs and progress; changed is closed and replaced on
	// every new entry.
	mu       sync.Mutex
	logs     []string
	progress []Progress
	changed  chan struct{}
}

// newTestEnv makes a workspace whose editor settings layer is settings,
// and Sources over it, not yet started.
func newTestEnv(t *testing.T, settings map[string]any) *testEnv {
	t.Helper()
	dir := t.TempDir()
	ws := workspace.New(workspace.Options{
		Roots: []string{dir},
		Settings: workspace.SettingsOptions{
			SystemPath: filepath.Join(t.TempDir(), "system.json"),
			UserDir:    t.TempDir(),
			Getenv:     func(string) (string, bool) { return "", false },
		},
	})
	ws.Settings.SetEditorLayer(settings)
	e := &testEnv{t: t, dir: ws.Roots.Primary(), ws: ws, changed: make(chan struct{})}
	e.env = &tools.Env{Workspace: ws, QwenHome: t.TempDir()}
	e.reg = New(builtins(), Filter{})
	e.src = NewSources(Options{
		Registry: e.reg,
		Env:      e.env,
		Version:  "test",
		Log: func(l LogLevel, msg string) {
			e.mu.Lock()
			e.logs = append(e.logs, msg)
			close(e.changed)
			e.changed = make(chan struct{})
			e.mu.Unlock()
		},
		Progress: func(p Progress) {
			e.mu.Lock()
			e.progress = append(e.progress, p)
			e.mu.Unlock()
		},
	})
	t.Cleanup(func() {
		e.src.Close()
		ws.Close()
	})
	return e
}

// start starts the sources and waits for their first attempts.
func (e *testEnv) start() {
	e.t.Helper()
	e.src.Start()
	e.wait()
}

// wait waits for the first attempts of the configured sources.
func (e *testEnv) wait() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := e.src.WaitFirstAttempt(ctx); err != nil {
		e.t.Fatalf("WaitFirstAttempt: %v", err)
	}
}

// setSettings replaces the editor settings layer, as
// workspace/didChangeConfiguration does, and waits for the new sources.
func (e *testEnv) setSettings(settings map[string]any) {
	e.t.Helper()
	e.ws.Settings.SetEditorLayer(settings)
	e.wait()
}

// waitFor waits until cond holds, re-checking after each log line and
// every few milliseconds (for conditions no log announces).
func (e *testEnv) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		e.mu.Lock()
		ch := e.changed
		e.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			e.t.Fatalf("gave up waiting for %s; log:\n%s", what, strings.Join(e.logLines(), "\n"))
		}
	}
}

func (e *testEnv) logLines() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.logs)
}

// countLogs counts the log lines containing s.
func (e *testEnv) countLogs(s string) int {
	n := 0
	for _, l := range e.logLines() {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// waitLog waits until n log lines contain s.
func (e *testEnv) waitLog(s string, n int) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("%d log lines with %q", n, s), func() bool { return e.countLogs(s) >= n })
}

// call runs a registered tool as the scheduler would after confirmation.
func (e *testEnv) call(ctx context.Context, name string, args map[string]any, onOutput func(tools.Output)) (tools.Result, error) {
	e.t.Helper()
	entry, terr := e.reg.Lookup(name)
	if terr != nil {
		e.t.Fatalf("lookup %s: %s", name, terr.Message)
	}
	if onOutput == nil {
		onOutput = func(tools.Output) {}
	}
	return entry.Tool.Execute(ctx, &tools.Call{ID: "c1", Name: name}, args, onOutput)
}

// mustCall calls a tool that must succeed and returns its text.
func (e *testEnv) mustCall(name string, args map[string]any) string {
	e.t.Helper()
	res, err := e.call(context.Background(), name, args, nil)
	if err != nil {
		e.t.Fatalf("%s: %v", name, err)
	}
	if res.Error != nil {
		e.t.Fatalf("%s: %s: %s", name, res.Error.Type, res.Error.Message)
	}
	return res.Text()
}

// mustFail calls a tool that must fail with type typ and returns the
// message.
func (e *testEnv) mustFail(name string, args map[string]any, typ tools.ErrorType) string {
	e.t.Helper()
	res, err := e.call(context.Background(), name, args, nil)
	if err != nil {
		e.t.Fatalf("%s: %v", name, err)
	}
	if res.Error == nil || res.Error.Type != typ {
		e.t.Fatalf("%s: got %+v (%q), want an error of type %s", name, res.Error, res.Text(), typ)
	}
	return res.Error.Message
}

func (e *testEnv) mcpNames() []string {
	var names []string
	for _, en := range e.reg.Snapshot().Entries() {
		if strings.HasPrefix(en.Source, "mcp:") {
			names = append(names, en.Name)
		}
	}
	return names
}

func (e *testEnv) status(alias string) ServerStatus {
	for _, s := range e.src.Servers() {
		if s.Alias == alias {
			return s
		}
	}
	e.t.Fatalf("no server %q in %+v", alias, e.src.Servers())
	return ServerStatus{}
}

// stdioServer is an mcpServers entry running the test server.
func stdioServer(t *testing.T, args ...string) map[string]any {
	list := make([]any, len(args))
	for i, a := range args {
		list[i] = a
	}
	return map[string]any{"command": mcpServerBin(t), "args": list}
}

// with returns a copy of m with more keys.
func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// readPids reads the pids a test server or script wrote to file.
func readPids(t *testing.T, file string) []int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read pids: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid %q: %v", f, err)
		}
		pids = append(pids, n)
	}
	return pids
}

// liveInGroups returns the processes of /proc, other than zombies, whose
// process group is one of pgids, or whose pid is.
// groupsOf lists the process groups of the live pids.
func groupsOf(pids []int) []int {
	var out []int
	for _, pid := range pids {
		data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 2 {
			if g, err := strconv.Atoi(f[2]); err == nil {
				out = append(out, g)
			}
		}
	}
	return out
}

func liveInGroups(pgids []int) []string {
	want := map[int]bool{}
	for _, p := range pgids {
		want[p] = true
	}
	entries, _ := os.ReadDir("/proc")
	var live []string
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", en.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces.
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		pgrp, _ := strconv.Atoi(f[2])
		if want[pgrp] || want[pid] {
			live = append(live, fmt.Sprintf("%d (%s, group %d)", pid, s[strings.IndexByte(s, '(')+1:i], pgrp))
		}
	}
	return live
}

// waitNoProcesses waits until no process is left in the groups (a killed
// process may take a moment to go).
func (e *testEnv) waitNoProcesses(pgids []int) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("no process in groups %v (left: %v)", pgids, liveInGroups(pgids)), func() bool {
		return len(liveInGroups(pgids)) == 0
	})
}

func requireLinux(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the process checks read /proc")
	}
}

// TestCase49_MCPNamingAndContent is conformance case 49: servers a and b
// both offer search, a also read_file and do/it; the names do not depend on
// which server comes up first; do/it's text and PNG; isError.
func TestCase49_MCPNamingAndContent(t *testing.T) {
	srvA := stdioServer(t, "-name", "a", "-tools", "search,read_file,do/it,fail")
	srvB := stdioServer(t, "-name", "b", "-tools", "search")
	want := []string{"a__read_file", "a__search", "b__search", "do_it", "fail"}

	// a alone, then b joins; and b alone, then a joins.
	for _, order := range [][]string{{"a", "b"}, {"b", "a"}} {
		servers := map[string]any{order[0]: map[string]any{"a": srvA, "b": srvB}[order[0]]}
		e := newTestEnv(t, map[string]any{"mcpServers": servers})
		e.start()
		e.setSettings(map[string]any{"mcpServers": map[string]any{"a": srvA, "b": srvB}})
		if got := e.mcpNames(); !slices.Equal(got, want) {
			t.Fatalf("order %v: names %v, want %v", order, got, want)
		}
		if got := e.mustCall("a__search", nil); got != "a:search" {
			t.Errorf("a__search answered %q", got)
		}
		if got := e.mustCall("b__search", nil); got != "b:search" {
			t.Errorf("b__search answered %q", got)
		}
	}

	e := newTestEnv(t, map[string]any{"mcpServers": map[string]any{"a": srvA, "b": srvB}})
	e.start()
	res, err := e.call(context.Background(), "do_it", nil, nil)
	if err != nil || res.Error != nil {
		t.Fatalf("do_it: %v %+v", err, res.Error)
	}
	if len(res.LLMContent) != 3 ||
		res.LLMContent[0].Text != "a" ||
		res.LLMContent[1].Text != `[The tool "do/it" returned image data (image/png).]` ||
		res.LLMContent[2].InlineData == nil || res.LLMContent[2].InlineData.MimeType != "image/png" ||
		!strings.HasPrefix(res.LLMContent[2].InlineData.Data, "iVBORw0KGgo") {
		b, _ := json.Marshal(res.LLMContent)
		t.Errorf("do_it content %s", b)
	}
	// What the model then reads (tools.md §5.5): the text parts, and a
	// line per media part.
	var lines []string
	for _, p := range res.LLMContent {
		if p.InlineData != nil {
			lines = append(lines, "["+p.InlineData.MimeType+" content attached in the following message]")
		} else {
			lines = append(lines, p.Text)
		}
	}
	if got := strings.Join(lines, "\n"); got != "a\n[The tool \"do/it\" returned image data (image/png).]\n[image/png content attached in the following message]" {
		t.Errorf("model text %q", got)
	}
	if got := res.Display; got != tools.Markdown("a\n[The tool \"do/it\" returned image data (image/png).]\n[image/png]") {
		t.Errorf("display %q", got)
	}

	msg := e.mustFail("fail", map[string]any{"k": "v"}, tools.ErrorMCPTool)
	if want := `The MCP tool "fail" returned an error for the arguments {"k":"v"}: [{"type":"text","text":"bad input"}]`; msg != want {
		t.Errorf("isError message\n got %s\nwant %s", msg, want)
	}
}

// TestCase50_StdioServerReconnects is conformance case 50: a stdio server
// that exits after its first call is reconnected by the next call; when it
// cannot start, the call fails with mcp_tool_error and the session goes on.
func TestCase50_StdioServerReconnects(t *testing.T) {
	failFile := filepath.Join(t.TempDir(), "fail")
	e := newTestEnv(t, map[string]any{"mcpServers": map[string]any{
		"a":     stdioServer(t, "-name", "a", "-tools", "hello", "-exit-after-call", "-fail-if-exists", failFile),
		"other": stdioServer(t, "-name", "other", "-tools", "ping"),
	}})
	e.start()
	if got := e.mustCall("hello", nil); got != "a:hello" {
		t.Fatalf("first call %q", got)
	}
	e.waitLog("MCP server 'a' disconnected: the server process exited with code 0", 1)
	if st := e.status("a"); st.Status != StatusDisconnected {
		t.Errorf("status after the exit %+v", st)
	}
	if got := e.mustCall("hello", nil); got != "a:hello" {
		t.Fatalf("call after the exit %q", got)
	}
	e.waitLog("MCP server 'a' disconnected", 2)

	if err := os.WriteFile(failFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	msg := e.mustFail("hello", nil, tools.ErrorMCPTool)
	if !strings.HasPrefix(msg, "MCP server 'a' is not available: ") || !strings.Contains(msg, "exited with code 1") {
		t.Errorf("message %q", msg)
	}
	if st := e.status("a"); st.Status != StatusDisconnected || st.Error == "" {
		t.Errorf("status %+v", st)
	}
	// The tool stays registered, and the other server is untouched.
	if !slices.Contains(e.mcpNames(), "hello") {
		t.Errorf("hello left the registry: %v", e.mcpNames())
	}
	if got := e.mustCall("ping", nil); got != "other:ping" {
		t.Errorf("other server answered %q", got)
	}
}

// TestFailingServersDoNotStopOthers covers a server that never answers
// initialize (timed out and reported), one that cannot start, one with no
// command, and one that crashes mid-call (an error, then the next call
// restarts it), next to a healthy server.
func TestFailingServersDoNotStopOthers(t *testing.T) {
	e := newTestEnv(t, map[string]any{"mcpServers": map[string]any{
		"good":   stdioServer(t, "-name", "good", "-tools", "hello"),
		"hang":   with(stdioServer(t, "-hang-init"), "discoveryTimeoutMs", 300),
		"broken": stdioServer(t, "-fail-start"),
		"crashy": stdioServer(t, "-name", "crashy", "-tools", "crash,ping"),
		"empty":  map[string]any{"trust": true},
	}})
	e.start()

	hang := e.status("hang")
	if hang.Status != StatusDisconnected || !strings.Contains(hang.Error, "no answer within 300 ms") {
		t.Errorf("hang: %+v", hang)
	}
	broken := e.status("broken")
	if broken.Status != StatusDisconnected || !strings.Contains(broken.Error, "exited with code 1") ||
		!strings.Contains(broken.Error, "broken on purpose") {
		t.Errorf("broken: %+v", broken)
	}
	empty := e.status("empty")
	if empty.Error != `MCP server "empty" sets none of httpUrl, url and command, so it cannot be started.` {
		t.Errorf("empty: %+v", empty)
	}
	if e.countLogs("MCP server 'hang' is not available: no answer within 300 ms") != 1 {
		t.Errorf("the timeout was not logged:\n%s", strings.Join(e.logLines(), "\n"))
	}
	if st := e.status("good"); st.Status != StatusConnected {
		t.Errorf("good: %+v", st)
	}

	msg := e.mustFail("crash", nil, tools.ErrorMCPTool)
	if !strings.HasPrefix(msg, "MCP server 'crashy' connection lost during the call: the server process exited with code 3") {
		t.Errorf("crash message %q", msg)
	}
	if st := e.status("crashy"); st.Status != StatusDisconnected {
		t.Errorf("crashy after the crash: %+v", st)
	}
	if got := e.mustCall("ping", nil); got != "crashy:ping" {
		t.Errorf("ping after the crash %q", got)
	}
	if st := e.status("crashy"); st.Status != StatusConnected {
		t.Errorf("crashy after the reconnect: %+v", st)
	}
	if got := e.mustCall("hello", nil); got != "good:hello" {
		t.Errorf("good answered %q", got)
	}
	want := []ServerStatus{{"broken", StatusDisconnected, broken.Error}, {"crashy", StatusConnected, ""},
		{"empty", StatusDisconnected, empty.Error}, {"good", StatusConnected, ""}, {"hang", StatusDisconnected, hang.Error}}
	if got := e.src.Servers(); !slices.Equal(got, want) {
		t.Errorf("servers %+v", got)
	}
}

// TestCloseLeavesNoProcess starts servers that start children of their
// own, a timed-out one and a discovery run, then checks that Close leaves
// no process in any of their groups.
func TestCloseLeavesNoProcess(t *testing.T) {
	requireLinux(t)
	tmp := t.TempDir()
	pids, children := filepath.Join(tmp, "pids"), filepath.Join(tmp, "children")
	e := newTestEnv(t, nil)
	copyScripts(t, e.dir)
	e.setSettings(map[string]any{
		"mcpServers": map[string]any{
			"a":    stdioServer(t, "-name", "a", "-tools", "hello", "-pidfile", pids, "-child", children),
			"b":    stdioServer(t, "-name", "b", "-tools", "slow", "-pidfile", pids, "-child", children),
			"hang": with(stdioServer(t, "-hang-init", "-pidfile", pids, "-child", children), "discoveryTimeoutMs", 200),
		},
		"tools": map[string]any{
			"toolDiscoveryCommand": filepath.Join(e.dir, "discover.sh") + " case48",
			"toolCallCommand":      filepath.Join(e.dir, "call.sh"),
		},
	})
	e.start()
	e.mustCall("hello", nil)
	// A call in flight when Close comes ends as cancelled.
	got := make(chan error, 1)
	started := make(chan struct{})
	var once sync.Once
	go func() {
		res, err := e.call(context.Background(), "slow", nil, func(tools.Output) { once.Do(func() { close(started) }) })
		if err == nil {
			err = fmt.Errorf("no error but a result: %q %+v", res.Text(), res.Error)
		}
		got <- err
	}()
	<-started
	groups := readPids(t, pids)
	if len(groups) != 3 {
		t.Fatalf("server pids %v", groups)
	}
	// Each server runs under a supervisor that leads its process group.
	groups = append(groups, groupsOf(groups)...)
	// a and b with their children; hang's group is gone already.
	if live := liveInGroups(groups); len(live) != 6 {
		t.Fatalf("expected 2 servers, their supervisors and 2 children alive, found %v", live)
	}
	e.src.Close()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Errorf("call in flight ended with %v", err)
	}
	e.waitNoProcesses(append(groups, readPids(t, children)...))
	for _, s := range e.src.Servers() {
		if s.Status != StatusDisconnected {
			t.Errorf("after Close: %+v", s)
		}
	}
	if _, err := e.call(context.Background(), "t1", map[string]any{"x": "v"}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("discovered call after Close: %v", err)
	}
}

// TestProgressAndCancellation streams a progress notification as live
// output, then cancels the call: the call ends with the context's error and
// the server hears notifications/cancelled.
func TestProgressAndCancellation(t *testing.T) {
	markers := t.TempDir()
	e := newTestEnv(t, map[string]any{"mcpServers": map[string]any{
		"s": stdioServer(t, "-name", "s", "-tools", "slow,hello", "-markers", markers),
	}})
	e.start()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outputs := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		_, err := e.call(ctx, "slow", nil, func(o tools.Output) { outputs <- o.Text })
		done <- err
	}()
	if got := <-outputs; got != "Progress: 1/2 half way" {
		t.Errorf("live output %q", got)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call returned %v", err)
	}
	e.waitFor("the server to see the cancellation", func() bool {
		data, _ := os.ReadFile(filepath.Join(markers, "cancelled"))
		return strings.TrimSpace(string(data)) == "slow"
	})
	if got := e.mustCall("hello", nil); got != "s:hello" {
		t.Errorf("after the cancellation %q", got)
	}
}

func TestCallTimeout(t *testing.T) {
	e := newTestEnv(t, map[string]any{"mcpServers": map[string]any{
		"s": with(stdioServer(t, "-name", "s", "-tools", "slow,hello"), "timeout", 300),
	}})
	e.start()
	msg := e.mustFail("slow", nil, tools.ErrorMCPTool)
	if msg != `The MCP tool "slow" did not answer within 300 ms.` {
		t.Errorf("message %q", msg)
	}
	if st := e.status("s"); st.Status != StatusConnected {
		t.Errorf("status after a timeout %+v", st)
	}
	if got := e.mustCall("hello", nil); got != "s:hello" {
		t.Errorf("after the timeout %q", got)
	}
}

func TestContentConversion(t *testing.T) {
	e := newTestEnv(t, map[string]any{"mcpServers": map[string]any{
		"s": stdioServer(t, "-name", "s", "-tools", "resources"),
	}})
	e.start()
	res, err := e.call(context.Background(), "resources", nil, nil)
	if err != nil || res.Error != nil {
		t.Fatalf("resources: %v %+v", err, res.Error)
	}
	var got []string
	for _, p := range res.LLMContent {
		if p.InlineData != nil {
			got = append(got, "inline "+p.InlineData.MimeType+" "+p.InlineData.Data)
		} else {
			got = append(got, p.Text)
		}
	}
	want := []string{
		"resource text",
		`[The tool "resources" returned an embedded resource (application/pdf).]`,
		"inline application/pdf JVBERg==",
		`[The tool "resources" returned an embedded resource (application/octet-stream).]`,
		"inline application/octet-stream AAEC",
		`Linked resource "doc.md": file:///doc.md`,
		`[The tool "resources" returned audio data (audio/wav).]`,
		"inline audio/wav UklGRg==",
	}
	if !slices.Equal(got, want) {
		t.Errorf("content\n got %q\nwant %q", got, want)
	}

	for _, tc := range []struct{ raw, want string }{
		{`{}`, noContentText},
		{`{"content":"text"}`, noContentText},
		{`{"content":[{"type":"text","text":"x"},{"type":"mystery"}]}`, "x"},
		{`{"content":[{"type":"resource_link","uri":"u","name":"n","title":"T"}]}`, `Linked resource "T": u`},
	} {
		res := convertCallResult(nil, "s", "t", nil, json.RawMessage(tc.raw))
		if res.Error != nil || res.Text() != tc.want {
			t.Errorf("%s: %q %+v", tc.raw, res.Text(), res.Error)
		}
	}
}

// TestToolsOfAServer checks what a server's tools look like: kind,
// display name, schema verbatim, source, confirmation, filters.
func TestToolsOfAServer(t *testing.T) {
	e := newTestEnv(t, map[string]any{"mcpServers": map[string]any{
		"s": with(stdioServer(t, "-name", "s", "-tools", "echo,hello,skip,gone", "-readonly", "echo"),
			"includeTools", []any{"echo", "hello(x)", "gone"}, "excludeTools", []any{"gone"}),
		"trusted": with(stdioServer(t, "-name", "trusted", "-tools", "tool"), "trust", true),
	}})
	e.start()
	if got := e.mcpNames(); !slices.Equal(got, []string{"echo", "hello", "tool"}) {
		t.Fatalf("names %v", got)
	}
	snap := e.reg.Snapshot()
	echo, _ := snap.Lookup("echo")
	if echo.Source != "mcp:s" || echo.Tool.Kind() != tools.KindRead || echo.Tool.DisplayName() != "echo (s MCP Server)" ||
		string(echo.Tool.Schema()) != `{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}` {
		t.Errorf("echo: %s %s %q %s", echo.Source, echo.Tool.Kind(), echo.Tool.DisplayName(), echo.Tool.Schema())
	}
	if c, terr := echo.Tool.ShouldConfirm(context.Background(), nil, nil); c != nil || terr != nil {
		t.Errorf("a read-only tool asks: %+v", c)
	}
	hello, _ := snap.Lookup("hello")
	if hello.Tool.Kind() != tools.KindOther || hello.Tool.Description() != "The hello tool of s." {
		t.Errorf("hello: %s %q", hello.Tool.Kind(), hello.Tool.Description())
	}
	c, terr := hello.Tool.ShouldConfirm(context.Background(), nil, nil)
	if terr != nil || c == nil {
		t.Fatalf("hello does not ask: %v", terr)
	}
	b, _ := json.Marshal(c)
	if string(b) != `{"type":"mcp","title":"Confirm MCP Tool: hello (s)","serverName":"s","toolName":"hello","toolDisplayName":"hello (s MCP Server)","permissionRules":["mcp__s__hello"]}` {
		t.Errorf("confirmation %s", b)
	}
	trusted, _ := snap.Lookup("tool")
	if c, _ := trusted.Tool.ShouldConfirm(context.Background(), nil, nil); c != nil {
		t.Errorf("a trusted server's tool asks: %+v", c)
	}
	// The title names the tool and its arguments, not raw JSON.
	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"x": "<v>"}, `echo (s): x="<v>"`},
		{map[string]any{"b": 2, "a": []any{"p", "q"}}, `echo (s): a=["p","q"] b=2`},
		{map[string]any{"long": strings.Repeat("y", 60)}, `echo (s): long="` + strings.Repeat("y", 38) + `…`},
		{nil, `echo (s)`},
	} {
		if d := echo.Tool.Describe(tc.params); d != tc.want {
			t.Errorf("describe %v = %q, want %q", tc.params, d, tc.want)
		}
	}
	if got := e.mustCall("echo", map[string]any{"x": "v"}); got != `{"x":"v"}` {
		t.Errorf("echo %q", got)
	}
}

func TestRootsEnvAndCwd(t *testing.T) {
	e := newTestEnv(t, nil)
	if err := os.Mkdir(filepath.Join(e.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.setSettings(map[string]any{"mcpServers": map[string]any{
		"s": with(stdioServer(t, "-name", "s", "-tools", "roots,env"),
			"env", map[string]any{"QWEN_TEST_VAR": "hi"}, "cwd", "sub"),
		"nodir": with(stdioServer(t, "-tools", "x"), "cwd", "missing"),
	}})
	e.start()
	want := fmt.Sprintf(`[{"uri":"file://%s","name":"%s"}]`, e.dir, filepath.Base(e.dir))
	if got := e.mustCall("roots", nil); got != want {
		t.Errorf("roots %s, want %s", got, want)
	}
	if got := e.mustCall("env", nil); got != "hi "+filepath.Join(e.dir, "sub") {
		t.Errorf("env %q", got)
	}
	if st := e.status("nodir"); !strings.Contains(st.Error, "missing does not exist") {
		t.Errorf("nodir %+v", st)
	}
}

// TestListChanged: a server that adds a tool announces it, and the
// registry follows.
func TestListChanged(t *testing.T) {
	e := newTestEnv(t, map[string]any{"mcpServers": map[string]any{
		"s": stdioServer(t, "-name", "s", "-tools", "addtool"),
	}})
	e.start()
	e.mustCall("addtool", nil)
	e.waitFor("the new tool", func() bool { return slices.Contains(e.mcpNames(), "late") })
	if got := e.mustCall("late", nil); got != "s:late" {
		t.Errorf("late %q", got)
	}
}

// TestServerSettings covers mcp.serverCommand, mcp.allowed, mcp.excluded,
// and settings changes that add, change and remove servers.
func TestServerSettings(t *testing.T) {
	requireLinux(t)
	bin := mcpServerBin(t)
	pids := filepath.Join(t.TempDir(), "pids")
	e := newTestEnv(t, map[string]any{
		"mcp": map[string]any{"serverCommand": bin + " -name cmd -tools fromcmd -pidfile " + pids},
		"mcpServers": map[string]any{
			"a": stdioServer(t, "-name", "a", "-tools", "ta", "-pidfile", pids),
			"b": stdioServer(t, "-name", "b", "-tools", "tb"),
		},
	})
	e.start()
	if got := e.mcpNames(); !slices.Equal(got, []string{"fromcmd", "ta", "tb"}) {
		t.Fatalf("names %v", got)
	}
	if got := e.mustCall("fromcmd", nil); got != "cmd:fromcmd" {
		t.Errorf("fromcmd %q", got)
	}
	var firstRound []string
	e.mu.Lock()
	for _, p := range e.progress {
		if p.Round == 1 {
			firstRound = append(firstRound, fmt.Sprintf("%s %d", p.Kind, p.Percentage))
		}
	}
	e.mu.Unlock()
	if !slices.Equal(firstRound, []string{"begin 0", "report 33", "report 66", "report 100", "end 0"}) {
		t.Errorf("progress of the first round %v", firstRound)
	}
	old := readPids(t, pids)

	// a changes, b goes, c comes, the command server is filtered out.
	e.setSettings(map[string]any{
		"mcp": map[string]any{"serverCommand": bin + " -name cmd -tools fromcmd", "excluded": []any{"mcp"}},
		"mcpServers": map[string]any{
			"a": stdioServer(t, "-name", "a2", "-tools", "ta"),
			"c": stdioServer(t, "-name", "c", "-tools", "tc"),
		},
	})
	if got := e.mcpNames(); !slices.Equal(got, []string{"ta", "tc"}) {
		t.Fatalf("names after the change %v", got)
	}
	if got := e.mustCall("ta", nil); got != "a2:ta" {
		t.Errorf("ta after the restart %q", got)
	}
	e.waitNoProcesses(old)
	if got := e.src.Servers(); len(got) != 2 || got[0].Alias != "a" || got[1].Alias != "c" {
		t.Errorf("servers %+v", got)
	}

	e.setSettings(map[string]any{
		"mcp": map[string]any{"allowed": []any{"c"}},
		"mcpServers": map[string]any{
			"a": stdioServer(t, "-name", "a2", "-tools", "ta"),
			"c": stdioServer(t, "-name", "c", "-tools", "tc"),
		},
	})
	if got := e.mcpNames(); !slices.Equal(got, []string{"tc"}) {
		t.Fatalf("names with mcp.allowed %v", got)
	}
}

// startHTTPServer runs the test server on a loopback port (mode -http or
// -sse) and returns its URL; the process stops at the end of the test, or
// when the returned function is called.
func startHTTPServer(t *testing.T, mode string, args ...string) (string, func()) {
	t.Helper()
	cmd := exec.Command(mcpServerBin(t), append([]string{mode, "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("server URL: %v", err)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "URL ")), stop
}

// TestStreamableHTTP runs a server over streamable HTTP on loopback:
// calls, cancellation, then the server going away.
func TestStreamableHTTP(t *testing.T) {
	markers := t.TempDir()
	url, stop := startHTTPServer(t, "-http", "-name", "h", "-tools", "hello,slow,roots", "-markers", markers)
	e := newTestEnv(t, map[string]any{"mcpServers": map[string]any{
		"h": map[string]any{"httpUrl": url, "headers": map[string]any{"X-Test": "1"}},
	}})
	e.start()
	if st := e.status("h"); st.Status != StatusConnected {
		t.Fatalf("status %+v", st)
	}
	if got := e.mustCall("hello", nil); got != "h:hello" {
		t.Errorf("hello %q", got)
	}
	if got := e.mustCall("roots", nil); !strings.Contains(got, `"uri":"file://`+e.dir+`"`) {
		t.Errorf("roots %q", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	outputs := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		_, err := e.call(ctx, "slow", nil, func(o tools.Output) { outputs <- o.Text })
		done <- err
	}()
	if got := <-outputs; got != "Progress: 1/2 half way" {
		t.Errorf("live output %q", got)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call returned %v", err)
	}
	e.waitFor("the server to see the cancellation", func() bool {
		data, _ := os.ReadFile(filepath.Join(markers, "cancelled"))
		return len(data) > 0
	})

	// The server goes away during a call: that call fails without a
	// retry, and the next one finds the server unavailable.
	results := make(chan tools.Result, 1)
	go func() {
		res, _ := e.call(context.Background(), "slow", nil, func(o tools.Output) { outputs <- o.Text })
		results <- res
	}()
	<-outputs
	stop()
	res := <-results
	if res.Error == nil || res.Error.Type != tools.ErrorMCPTool ||
		!strings.HasPrefix(res.Error.Message, "MCP server 'h' connection lost during the call: ") {
		t.Errorf("call in flight when the server stopped: %+v", res.Error)
	}
	e.waitLog("MCP server 'h' disconnected: ", 1)
	msg := e.mustFail("hello", nil, tools.ErrorMCPTool)
	if !strings.HasPrefix(msg, "MCP server 'h' is not available: ") {
		t.Errorf("next call after the server stopped: %q", msg)
	}
	if st := e.status("h"); st.Status != StatusDisconnected || st.Error == "" {
		t.Errorf("status %+v", st)
	}
}

func TestSSE(t *testing.T) {
	url, stop := startHTTPServer(t, "-sse", "-name", "e", "-tools", "hello")
	e := newTestEnv(t, map[string]any{"mcpServers": map[string]any{"e": map[string]any{"url": url}}})
	e.start()
	if got := e.mustCall("hello", nil); got != "e:hello" {
		t.Errorf("hello %q", got)
	}
	stop()
	e.waitLog("MCP server 'e' disconnected: the event stream ended", 1)
	msg := e.mustFail("hello", nil, tools.ErrorMCPTool)
	if !strings.HasPrefix(msg, "MCP server 'e' is not available: ") {
		t.Errorf("after the server stopped: %q", msg)
	}
}

func TestReadServerConfigs(t *testing.T) {
	ws := workspace.New(workspace.Options{Roots: []string{t.TempDir()}, Settings: workspace.SettingsOptions{
		SystemPath: filepath.Join(t.TempDir(), "s.json"), UserDir: t.TempDir(),
		Getenv: func(string) (string, bool) { return "", false },
	}})
	defer ws.Close()
	ws.Settings.SetEditorLayer(map[string]any{"mcpServers": map[string]any{
		"all":    map[string]any{"httpUrl": "http://h", "url": "http://s", "command": "c"},
		"sse":    map[string]any{"url": "http://s", "command": "c", "discoveryTimeoutMs": 7, "timeout": 9},
		"stdio":  map[string]any{"command": "c", "args": []any{"x", "y"}, "env": map[string]any{"B": "2", "A": "1"}, "cwd": "/abs"},
		"notobj": "x",
	}})
	got := readServerConfigs(ws.Settings, "/root")
	if c := got["all"]; c.Transport != transportHTTP || c.URL != "http://h" || c.DiscoveryTimeout != defaultRemoteDiscovery || c.Timeout != defaultCallTimeout {
		t.Errorf("all %+v", c)
	}
	if c := got["sse"]; c.Transport != transportSSE || c.DiscoveryTimeout != 7*time.Millisecond || c.Timeout != 9*time.Millisecond {
		t.Errorf("sse %+v", c)
	}
	if c := got["stdio"]; c.Transport != transportStdio || !slices.Equal(c.Args, []string{"x", "y"}) ||
		!slices.Equal(c.Env, []string{"A=1", "B=2"}) || c.Dir != "/abs" || c.DiscoveryTimeout != defaultStdioDiscovery {
		t.Errorf("stdio %+v", c)
	}
	if c := got["notobj"]; c.Invalid == "" {
		t.Errorf("notobj %+v", c)
	}
}
