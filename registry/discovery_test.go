package registry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools"
)

// copyScripts copies the discovery and call scripts into dir, executable.
func copyScripts(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{"discover.sh", "call.sh"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// discoveryEnv is a started test env whose discovery command is
// discover.sh <mode>, with more tools settings from kv.
func discoveryEnv(t *testing.T, mode string, kv ...any) *testEnv {
	t.Helper()
	e := newTestEnv(t, nil)
	copyScripts(t, e.dir)
	e.setSettings(map[string]any{"tools": with(map[string]any{
		"toolDiscoveryCommand": filepath.Join(e.dir, "discover.sh") + " " + mode,
		"toolCallCommand":      filepath.Join(e.dir, "call.sh"),
	}, kv...)})
	e.start()
	return e
}

func (e *testEnv) discoveredNames() []string {
	var names []string
	for _, en := range e.reg.Snapshot().Entries() {
		if en.Source == tools.SourceDiscovered {
			names = append(names, en.Name)
		}
	}
	return names
}

// TestCase48_CommandDiscovery is conformance case 48.
func TestCase48_CommandDiscovery(t *testing.T) {
	requireLinux(t)
	e := discoveryEnv(t, "case48", "commandToolTimeout", 1000.0)
	if got := e.discoveredNames(); !slices.Equal(got, []string{"t1", "t2"}) {
		t.Fatalf("discovered %v", got)
	}
	decls := e.reg.Declarations()
	var t1, t2 Declaration
	for _, d := range decls {
		switch d.Name {
		case "t1":
			t1 = d
		case "t2":
			t2 = d
		}
	}
	if string(t1.Parameters) != `{"type":"object","properties":{"x":{"type":"string"}}}` {
		t.Errorf("t1 schema %s", t1.Parameters)
	}
	if string(t2.Parameters) != `{"type":"object","properties":{}}` {
		t.Errorf("t2 schema %s", t2.Parameters)
	}
	if !strings.HasPrefix(t1.Description, "d\n\nThis tool was found by running the discovery command `"+filepath.Join(e.dir, "discover.sh")+" case48`.") ||
		!strings.Contains(t1.Description, "A call runs `"+filepath.Join(e.dir, "call.sh")+" t1`") {
		t.Errorf("t1 description %q", t1.Description)
	}
	entry, _ := e.reg.Lookup("t1")
	if entry.Tool.Kind() != tools.KindOther || entry.Tool.DisplayName() != "t1" {
		t.Errorf("t1: kind %s, display name %q", entry.Tool.Kind(), entry.Tool.DisplayName())
	}
	if c, _ := entry.Tool.ShouldConfirm(context.Background(), nil, nil); c != nil {
		t.Errorf("t1 asks for confirmation: %+v", c)
	}
	if d := entry.Tool.Describe(map[string]any{"x": "v"}); d != `{"x":"v"}` {
		t.Errorf("describe %q", d)
	}

	res, err := e.call(context.Background(), "t1", map[string]any{"x": "v"}, nil)
	if err != nil || res.Error != nil {
		t.Fatalf("t1: %v %+v", err, res.Error)
	}
	if res.Text() != "called t1 with {\"x\":\"v\"}\n" || res.Display != tools.Markdown("called t1 with {\"x\":\"v\"}\n") {
		t.Errorf("t1 returned %q, display %q", res.Text(), res.Display)
	}

	msg := e.mustFail("t2", nil, tools.ErrorDiscoveredToolExecution)
	want := "Stdout: partial output\nStderr: something went wrong\nError: (none)\nExit Code: 0\nSignal: (none)"
	if msg != want {
		t.Errorf("t2 message\n got %q\nwant %q", msg, want)
	}
	res, _ = e.call(context.Background(), "t2", nil, nil)
	if res.Text() != want || res.Display != tools.Markdown(want) {
		t.Errorf("t2 content %q, display %q", res.Text(), res.Display)
	}

	// Sleeping past tools.commandToolTimeout: the call script and its
	// child are stopped.
	if err := os.WriteFile(filepath.Join(e.dir, "sleep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	msg = e.mustFail("t1", map[string]any{"x": "v"}, tools.ErrorDiscoveredToolExecution)
	want = "Stdout: (empty)\nStderr: (empty)\nError: Tool call timed out after 1000ms\nExit Code: (none)\nSignal: SIGTERM"
	if msg != want {
		t.Errorf("timeout message\n got %q\nwant %q", msg, want)
	}
	pids := append(readPids(t, filepath.Join(e.dir, "call.pid")), readPids(t, filepath.Join(e.dir, "call-child.pid"))...)
	e.waitNoProcesses(pids)
}

func TestDiscoveryDeclarations(t *testing.T) {
	e := discoveryEnv(t, "mixed")
	if got := e.discoveredNames(); !slices.Equal(got, []string{"bare", "camel", "dup"}) {
		t.Fatalf("discovered %v", got)
	}
	for _, d := range e.reg.Declarations() {
		switch d.Name {
		case "camel":
			if string(d.Parameters) != `{"properties":{"l":{"items":{"type":"string"},"type":"array"},"n":{"type":"integer"}},"type":"object"}` {
				t.Errorf("camel schema %s", d.Parameters)
			}
		case "dup":
			if !strings.HasPrefix(d.Description, "first\n\n") {
				t.Errorf("dup description %q", d.Description)
			}
		case "bare":
			if !strings.HasPrefix(d.Description, "This tool was found") {
				t.Errorf("bare description %q", d.Description)
			}
		}
	}
	for _, w := range []string{
		`declared a tool named "read_file", which is a built-in tool's name; it is skipped.`,
		`declared a tool named "replace", which is a built-in tool's name; it is skipped.`,
		`declared a tool named "bad name!", which is not a valid tool name`,
		`declared "dup" more than once; the first declaration is used.`,
		`declared a tool without a name; it is skipped.`,
	} {
		if e.countLogs(w) != 1 {
			t.Errorf("no warning %q in\n%s", w, strings.Join(e.logLines(), "\n"))
		}
	}
	// The built-in keeps its name.
	if en, _ := e.reg.Lookup("read_file"); en.Source != tools.SourceBuiltin {
		t.Errorf("read_file is from %q", en.Source)
	}

	// A call that exits with a code.
	msg := e.mustFail("bare", map[string]any{}, tools.ErrorDiscoveredToolExecution)
	if msg != "Stdout: about to fail\nStderr: (empty)\nError: (none)\nExit Code: 3\nSignal: (none)" {
		t.Errorf("exit 3 message %q", msg)
	}

	// New settings: discovery runs again and its result replaces the
	// discovered tools.
	e.setSettings(map[string]any{"tools": map[string]any{
		"discoveryCommand": filepath.Join(e.dir, "discover.sh") + " case48",
		"callCommand":      filepath.Join(e.dir, "call.sh"),
	}})
	if got := e.discoveredNames(); !slices.Equal(got, []string{"t1", "t2"}) {
		t.Fatalf("after the change %v", got)
	}
	// No call command: nothing is registered.
	e.setSettings(map[string]any{"tools": map[string]any{
		"discoveryCommand": filepath.Join(e.dir, "discover.sh") + " case48",
	}})
	if got := e.discoveredNames(); len(got) != 0 {
		t.Fatalf("without a call command %v", got)
	}
	e.waitLog("A tool discovery command is set but no call command", 1)
}

func TestDiscoveryFailures(t *testing.T) {
	requireLinux(t)
	for _, tc := range []struct {
		mode, timeout, want string
	}{
		{"notarray", "", "The tool discovery command did not print a JSON array of tools."},
		{"fail", "", "The tool discovery command exited with code 4."},
		{"big", "", "The tool discovery command wrote more than 10 MiB and was stopped."},
		{"slow", "500", "The tool discovery command did not finish within 500 ms."},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			var kv []any
			if tc.timeout != "" {
				kv = []any{"commandToolTimeout", tc.timeout}
			}
			e := discoveryEnv(t, tc.mode, kv...)
			if n := e.countLogs(tc.want); n != 1 {
				t.Errorf("log has %d lines %q:\n%s", n, tc.want, strings.Join(e.logLines(), "\n"))
			}
			if got := e.discoveredNames(); len(got) != 0 {
				t.Errorf("discovered %v", got)
			}
			if tc.mode == "slow" {
				e.waitNoProcesses(append(readPids(t, filepath.Join(e.dir, "discover.pid")),
					readPids(t, filepath.Join(e.dir, "discover-child.pid"))...))
			}
		})
	}
	e := newTestEnv(t, map[string]any{"tools": map[string]any{
		"toolDiscoveryCommand": "'unclosed",
		"toolCallCommand":      "x",
	}})
	e.start()
	e.waitLog("The tool discovery command could not be split into words: a single quote is not closed.", 1)
	e.setSettings(map[string]any{"tools": map[string]any{
		"toolDiscoveryCommand": "/nonexistent/discover",
		"toolCallCommand":      "x",
	}})
	e.waitLog("The tool discovery command could not be started: ", 1)
}

func TestDiscoveredCallCancelled(t *testing.T) {
	requireLinux(t)
	e := discoveryEnv(t, "case48")
	if err := os.WriteFile(filepath.Join(e.dir, "sleep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.call(ctx, "t1", map[string]any{"x": "v"}, nil)
		done <- err
	}()
	e.waitFor("the call to start", func() bool {
		_, err := os.Stat(filepath.Join(e.dir, "call-child.pid"))
		return err == nil
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call returned %v", err)
	}
	e.waitNoProcesses(append(readPids(t, filepath.Join(e.dir, "call.pid")), readPids(t, filepath.Join(e.dir, "call-child.pid"))...))
}

func TestSplitCommandLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"", nil, false},
		{"  a  b\tc\n", []string{"a", "b", "c"}, false},
		{`cmd 'a b' "c d"`, []string{"cmd", "a b", "c d"}, false},
		{`a'b'"c"d`, []string{"abcd"}, false},
		{`'' ""`, []string{"", ""}, false},
		{`a\ b \'x`, []string{"a b", "'x"}, false},
		{`"\$HOME \"q\" \\ \n"`, []string{`$HOME "q" \ \n`}, false},
		{`'$HOME \n'`, []string{`$HOME \n`}, false},
		{"a \\\nb", []string{"a", "b"}, false},
		{`$X ~ *`, []string{"$X", "~", "*"}, false},
		{`'open`, nil, true},
		{`"open`, nil, true},
	} {
		got, err := splitCommandLine(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("splitCommandLine(%q) = %q, %v", tc.in, got, err)
		}
	}
}

func TestParseDeclarations(t *testing.T) {
	decls, warnings, err := parseDeclarations([]byte(`[{"name":"a","parametersJsonSchema":{"b":1,"a":2},"parameters":{"type":"OBJECT"}},{"name":"p","parameters":{"type":["STRING","NULL"]}},{"name":"s","parametersJsonSchema":"x"}]`))
	if err != nil || len(warnings) != 0 || len(decls) != 3 {
		t.Fatalf("%+v %v %v", decls, warnings, err)
	}
	if string(decls[0].Schema) != `{"b":1,"a":2}` {
		t.Errorf("verbatim schema %s", decls[0].Schema)
	}
	if string(decls[1].Schema) != `{"type":["string","null"]}` {
		t.Errorf("parameters %s", decls[1].Schema)
	}
	if string(decls[2].Schema) != defaultParameters {
		t.Errorf("non-object schema %s", decls[2].Schema)
	}
	for _, bad := range []string{`{}`, `null`, `nope`, ``} {
		if _, _, err := parseDeclarations([]byte(bad)); err == nil || err.Error() != "The tool discovery command did not print a JSON array of tools." {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestOutputTruncation: a discovered tool's output and an MCP tool's text
// go through tools.md §2.8.
func TestOutputTruncation(t *testing.T) {
	e := newTestEnv(t, nil)
	copyScripts(t, e.dir)
	e.setSettings(map[string]any{
		"tools": map[string]any{
			"toolDiscoveryCommand":        filepath.Join(e.dir, "discover.sh") + " case48",
			"toolCallCommand":             filepath.Join(e.dir, "call.sh"),
			"truncateToolOutputThreshold": 40.0,
		},
		"mcpServers": map[string]any{"s": stdioServer(t, "-name", "s", "-tools", "echo")},
	})
	e.start()
	long := strings.Repeat("y", 200)
	for _, tc := range []struct{ tool, file, whole string }{
		{"t1", "t1_", "called t1 with {\"x\":\"" + long + "\"}\n"},
		{"echo", "mcp__s__echo_", "{\"x\":\"" + long + "\"}"},
	} {
		res, err := e.call(context.Background(), tc.tool, map[string]any{"x": long}, nil)
		if err != nil || res.Error != nil {
			t.Fatalf("%s: %v %+v", tc.tool, err, res.Error)
		}
		text := res.Text()
		if !strings.HasPrefix(text, "The output is too long, so only its start and end are shown;") {
			t.Errorf("%s: text %q", tc.tool, text)
		}
		files, _ := filepath.Glob(filepath.Join(e.env.ProjectTempDir(), tc.file+"*.output"))
		if len(files) != 1 {
			t.Fatalf("%s: saved files %v", tc.tool, files)
		}
		if data, _ := os.ReadFile(files[0]); string(data) != tc.whole {
			t.Errorf("%s: saved %q", tc.tool, data)
		}
		if d, _ := res.Display.(tools.Markdown); !strings.HasSuffix(string(d), "Output truncated; the whole output is in "+files[0]) {
			t.Errorf("%s: display %q", tc.tool, d)
		}
	}
}
