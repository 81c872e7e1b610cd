package tools_test

import (
	"bufio"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/toolset"
	"github.com/qwen-ls/qwen-ls/tools/toolstest"
)

var updateShell = flag.Bool("update-shell", false, "rewrite the golden declaration of run_shell_command")

// shellTestEnv is the conformance setup with the shell tool; whatever the
// test's commands leave running is killed when it ends.
func shellTestEnv(t *testing.T, settings map[string]any) (*testEnv, *tools.Shell) {
	t.Helper()
	e := newTestEnv(t, settings)
	sh := tools.NewShell(e.Env)
	if e.Processes == nil {
		t.Fatal("NewShell did not give the env a process registry")
	}
	t.Cleanup(e.Processes.KillAll)
	return e, sh
}

// execShell prepares args and executes the tool with ctx, collecting the
// live updates.
func execShell(t *testing.T, ctx context.Context, sh *tools.Shell, call *tools.Call, args map[string]any) (tools.Result, []string, error) {
	t.Helper()
	params, terr := tools.PrepareArgs(sh, argsJSON(t, args))
	if terr != nil {
		t.Fatalf("arguments %v refused: %s", args, terr.Message)
	}
	var mu sync.Mutex
	var updates []string
	res, err := tools.Guard(ctx, sh, call, params, func(o tools.Output) {
		mu.Lock()
		updates = append(updates, o.Text)
		mu.Unlock()
	})
	mu.Lock()
	defer mu.Unlock()
	return res, slices.Clone(updates), err
}

// shellRun executes a command that must succeed without a Go error.
func shellRun(t *testing.T, sh *tools.Shell, args map[string]any) tools.Result {
	t.Helper()
	res, _, err := execShell(t, context.Background(), sh, &tools.Call{ID: "c", SessionID: "s"}, args)
	if err != nil {
		t.Fatalf("execute %v: %v", args, err)
	}
	return res
}

// field returns the value of a "Name: value" line of the llmContent.
func field(t *testing.T, text, name string) string {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, name+": "); ok {
			return v
		}
	}
	t.Fatalf("no %s line in\n%s", name, text)
	return ""
}

func pgidOf(t *testing.T, text string) int {
	t.Helper()
	n, err := strconv.Atoi(field(t, text, "Process Group PGID"))
	if err != nil {
		t.Fatalf("PGID line: %v", err)
	}
	return n
}

// procGroup lists the live processes of group pgid straight from /proc,
// independently of the code under test.
func procGroup(t *testing.T, pgid int) []string {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		rest := s[strings.LastIndexByte(s, ')')+2:]
		f := strings.Fields(rest)
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			out = append(out, s[:strings.IndexByte(s, ')')+1])
		}
	}
	return out
}

// waitGroupGone waits up to d for the group to have no live process.
func waitGroupGone(t *testing.T, pgid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := procGroup(t, pgid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has %v after %v", pgid, left, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestShellDeclarationGolden(t *testing.T) {
	_, sh := shellTestEnv(t, nil)
	toolstest.Golden(t, "declarations/run_shell_command.json", readDeclarationJSON(t, sh), *updateShell)
}

func TestShellSpec(t *testing.T) {
	e, sh := shellTestEnv(t, nil)
	if sh.Name() != "run_shell_command" || sh.DisplayName() != "Shell" || sh.Kind() != tools.KindExecute ||
		!sh.StreamsOutput() || sh.Source() != tools.SourceBuiltin || len(sh.Aliases()) != 0 {
		t.Errorf("spec: %s %s %s streams=%v %s %v", sh.Name(), sh.DisplayName(), sh.Kind(), sh.StreamsOutput(), sh.Source(), sh.Aliases())
	}
	var names []string
	for _, tool := range toolset.Builtins(e.Env) {
		names = append(names, tool.Name())
	}
	i := slices.Index(names, "run_shell_command")
	if i < 1 || names[i-1] != "read_many_files" {
		t.Errorf("run_shell_command is not declared right after read_many_files: %v", names)
	}
}

func TestShellValidation(t *testing.T) {
	e, sh := shellTestEnv(t, nil)
	e.write(t, "sub/f.txt", "x")
	outside := t.TempDir()
	for _, c := range []struct {
		args map[string]any
		typ  tools.ErrorType
		msg  string
	}{
		{map[string]any{"command": "  \n"}, "", `Argument "command" must not be empty.`},
		{map[string]any{"command": `echo "hi`}, "", "Could not parse the command: 1:6: reached EOF without closing quote `\"`. Check the quoting and try again."},
		{map[string]any{"command": "A=1 B=2"}, "", "The command runs no program (it only sets variables), so there is nothing to approve or run."},
		{map[string]any{"command": "sleep 1 &", "is_background": true}, "", `With is_background true, do not end the command with "&": remove the trailing "&", and the command still runs in the background.`},
		{map[string]any{"command": "ls", "timeout": -0.5}, "", timeoutRange + "; -0.5 is not a whole number."},
		{map[string]any{"command": "ls", "timeout": 1e300}, "", `Argument "timeout" can be at most 600000 (10 minutes).`},
		{map[string]any{"command": "ls", "timeout": 600000.5}, "", `Argument "timeout" can be at most 600000 (10 minutes).`},
		{map[string]any{"command": "ls", "timeout": 0}, "", timeoutRange + "; 0 is less than 1 second."},
		{map[string]any{"command": "ls", "timeout": -5}, "", timeoutRange + "; -5 is less than 1 second."},
		{map[string]any{"command": "ls", "timeout": 600001}, "", `Argument "timeout" can be at most 600000 (10 minutes).`},
		{map[string]any{"command": "ls", "directory": "../x"}, tools.ErrorPathNotInWorkspace, "Directory " + filepath.Join(filepath.Dir(e.Root), "x") + " is outside the workspace."},
		{map[string]any{"command": "ls", "directory": outside}, tools.ErrorPathNotInWorkspace, "Directory " + outside + " is outside the workspace."},
		{map[string]any{"command": "ls", "directory": "nope"}, "", "Directory " + filepath.Join(e.Root, "nope") + " does not exist."},
		{map[string]any{"command": "ls", "directory": "sub/f.txt"}, "", filepath.Join(e.Root, "sub/f.txt") + " is not a directory."},
		// The order of §3.8: the empty command before anything else, the
		// parse before the timeout.
		{map[string]any{"command": "", "timeout": 0}, "", `Argument "command" must not be empty.`},
		{map[string]any{"command": "echo 'x", "timeout": 0}, "", "Could not parse the command: 1:6: reached EOF without closing quote `'`. Check the quoting and try again."},
		{map[string]any{"command": "ls", "timeout": 0, "directory": "nope"}, "", timeoutRange + "; 0 is less than 1 second."},
	} {
		_, terr := tools.PrepareArgs(sh, argsJSON(t, c.args))
		want := c.typ
		if want == "" {
			want = tools.ErrorInvalidToolParams
		}
		if terr == nil || terr.Message != c.msg || terr.Type != want {
			t.Errorf("%v: got %+v, want %s %q", c.args, terr, want, c.msg)
		}
	}
	for _, ok := range []map[string]any{
		{"command": "ls", "timeout": 600000},
		{"command": "ls", "timeout": 5000.0},
		{"command": "ls", "timeout": 1000},
		{"command": "ls", "directory": "sub"},
		{"command": "ls", "directory": filepath.Join(e.Root, "sub")},
		{"command": "ls", "directory": "sub/../sub/"},
		{"command": "sleep 1 &"},
		{"command": "sleep 1", "is_background": true},
		{"command": "X=1 true"},
	} {
		if _, terr := tools.PrepareArgs(sh, argsJSON(t, ok)); terr != nil {
			t.Errorf("%v refused: %s", ok, terr.Message)
		}
	}
}

func TestShellDescribe(t *testing.T) {
	_, sh := shellTestEnv(t, nil)
	for _, c := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"command": "ls -la"}, "ls -la"},
		{map[string]any{"command": "ls", "directory": "sub"}, "ls [in sub]"},
		{map[string]any{"command": "ls", "description": "List\nthe files"}, "ls (List the files)"},
		{map[string]any{"command": "make", "directory": "b", "description": "Build"}, "make [in b] (Build)"},
	} {
		if got := sh.Describe(c.params); got != c.want {
			t.Errorf("Describe(%v) = %q, want %q", c.params, got, c.want)
		}
	}
}

// TestShellConfirmation covers compound commands that a check of the
// command's first words would get wrong.
func TestShellConfirmation(t *testing.T) {
	e, sh := shellTestEnv(t, nil)
	// A trusted folder: git's read-only commands run unasked
	// (TestUntrustedRepositoryGitAsks covers the other case).
	trusted := true
	e.Env.Settings().SetEditorTrust(&trusted)
	for _, c := range []struct {
		cmd      string
		commands []string
		root     string
		rules    []string
	}{
		{"git status; rm -rf x", []string{"rm -rf x"}, "rm", []string{"Bash(rm *)"}},
		{"timeout 5 rm x", []string{"timeout 5 rm x"}, "timeout", []string{"Bash(timeout *)"}},
		{"echo $(rm x)", []string{"echo $(rm x)", "rm x"}, "echo, rm", []string{"Bash(echo *)", "Bash(rm *)"}},
		// A redirection to a file gets the exact rule: Bash(echo *) never
		// covers it.
		{"echo hi > file", []string{"echo hi > file"}, "echo", []string{"Bash(echo hi > file)"}},
		{"ls && npm run build && npm run test", []string{"npm run build", "npm run test"}, "npm", []string{"Bash(npm run *)"}},
		{"echo $(git rev-parse HEAD)", []string{"echo $(git rev-parse HEAD)"}, "echo", []string{"Bash(echo *)"}},
		{"env FOO=1 ls", []string{"env FOO=1 ls"}, "env", []string{"Bash(env *)"}},
		{"touch", []string{"touch"}, "touch", []string{"Bash(touch)"}},
	} {
		conf, terr := tools.GuardConfirm(context.Background(), sh, &tools.Call{}, map[string]any{"command": c.cmd})
		if terr != nil || conf == nil {
			t.Errorf("%q: confirmation %v, error %v", c.cmd, conf, terr)
			continue
		}
		d, ok := conf.Details.(*tools.ExecConfirmation)
		if !ok || conf.Title != "Confirm Shell Command" || d.Command != c.cmd || d.RootCommand != c.root ||
			!slices.Equal(d.Commands, c.commands) || !slices.Equal(d.PermissionRules, c.rules) {
			t.Errorf("%q: got %q %+v", c.cmd, conf.Title, conf.Details)
		}
		if sh.AllowedInPlanMode(map[string]any{"command": c.cmd}) {
			t.Errorf("%q is allowed in plan mode", c.cmd)
		}
	}
	for _, cmd := range []string{"ls", "git status && git diff | head", "cat a | grep x; pwd", "find . -name '*.go' | wc -l"} {
		conf, terr := tools.GuardConfirm(context.Background(), sh, &tools.Call{}, map[string]any{"command": cmd})
		if conf != nil || terr != nil {
			t.Errorf("%q asks: %+v %v", cmd, conf, terr)
		}
		if !sh.AllowedInPlanMode(map[string]any{"command": cmd}) {
			t.Errorf("%q is not allowed in plan mode", cmd)
		}
	}
	if sh.AllowedInPlanMode(map[string]any{"command": `echo "x`}) {
		t.Error("an unparsable command is allowed in plan mode")
	}
}

func TestShellOutputCleaning(t *testing.T) {
	_, sh := shellTestEnv(t, nil)
	res := shellRun(t, sh, map[string]any{
		"command": `printf '\033[1;31mred\033[0m\r\nline two  \n\n\n'; printf 'bad \377 byte\n' >&2; exit 7`,
	})
	text := res.Text()
	if got := field(t, text, "Stdout"); got != "red" {
		t.Errorf("stdout first line %q", got)
	}
	if !strings.Contains(text, "Stdout: red\nline two\nStderr: bad \uFFFD byte\nError: (none)\nExit Code: 7\nSignal: (none)\n") {
		t.Errorf("text:\n%s", text)
	}
	if res.Error != nil || res.Display != tools.Markdown("red\nline two\nbad \uFFFD byte") {
		t.Errorf("error %v, display %q", res.Error, res.Display)
	}
}

func TestShellEnvironmentAndStdin(t *testing.T) {
	_, sh := shellTestEnv(t, nil)
	res := shellRun(t, sh, map[string]any{"command": `echo "$QWEN_CODE $PAGER $GIT_PAGER $TERM"; cat; echo "stdin done"`})
	if got := field(t, res.Text(), "Stdout"); got != "1 cat cat dumb" {
		t.Errorf("environment %q", got)
	}
	if !strings.Contains(res.Text(), "stdin done") {
		t.Errorf("cat waited on stdin:\n%s", res.Text())
	}
}

func TestShellDirectory(t *testing.T) {
	e, sh := shellTestEnv(t, nil)
	e.write(t, "sub/deeper/x", "")
	e.write(t, "my dir/x", "")
	for _, c := range []struct{ dir, ranIn, label string }{
		{"", e.Root, "(root)"},
		{"sub", filepath.Join(e.Root, "sub"), "sub"},
		{"sub/deeper/", filepath.Join(e.Root, "sub/deeper"), "sub/deeper/"},
		{filepath.Join(e.Root, "sub"), filepath.Join(e.Root, "sub"), filepath.Join(e.Root, "sub")},
		{`my\ dir`, filepath.Join(e.Root, "my dir"), `my\ dir`},
	} {
		args := map[string]any{"command": "pwd"}
		if c.dir != "" {
			args["directory"] = c.dir
		}
		res := shellRun(t, sh, args)
		if got := field(t, res.Text(), "Stdout"); got != c.ranIn {
			t.Errorf("directory %q ran in %q, want %q", c.dir, got, c.ranIn)
		}
		if got := field(t, res.Text(), "Directory"); got != c.label {
			t.Errorf("directory %q shown as %q, want %q", c.dir, got, c.label)
		}
	}
}

// TestShellFailureToStart: a directory that vanishes between validation and
// execution is a shell_execute_error, not a Go error.
func TestShellFailureToStart(t *testing.T) {
	e, sh := shellTestEnv(t, nil)
	e.write(t, "gone/x", "")
	params, terr := tools.PrepareArgs(sh, argsJSON(t, map[string]any{"command": "ls", "directory": "gone"}))
	if terr != nil {
		t.Fatal(terr.Message)
	}
	if err := os.RemoveAll(filepath.Join(e.Root, "gone")); err != nil {
		t.Fatal(err)
	}
	res, err := tools.Guard(context.Background(), sh, &tools.Call{}, params, nil)
	if err != nil || res.Error == nil || res.Error.Type != tools.ErrorShellExecute ||
		!strings.Contains(res.Error.Message, "does not exist") {
		t.Errorf("result %+v, %v", res.Error, err)
	}

	t.Setenv("PATH", t.TempDir())
	params, _ = tools.PrepareArgs(sh, argsJSON(t, map[string]any{"command": "ls"}))
	res, err = tools.Guard(context.Background(), sh, &tools.Call{}, params, nil)
	if err != nil || res.Error == nil || res.Error.Type != tools.ErrorShellExecute || !strings.Contains(res.Error.Message, "bash") {
		t.Errorf("without bash: %+v, %v", res.Error, err)
	}
}

// TestShellStreamsOutput: output reaches onOutput while the command still
// runs.
func TestShellStreamsOutput(t *testing.T) {
	_, sh := shellTestEnv(t, nil)
	params, terr := tools.PrepareArgs(sh, argsJSON(t, map[string]any{"command": "echo first; sleep 2; echo second"}))
	if terr != nil {
		t.Fatal(terr.Message)
	}
	early := make(chan string, 1)
	var mu sync.Mutex
	var all []string
	done := make(chan tools.Result, 1)
	go func() {
		res, _ := tools.Guard(context.Background(), sh, &tools.Call{}, params, func(o tools.Output) {
			mu.Lock()
			all = append(all, o.Text)
			mu.Unlock()
			if strings.Contains(o.Text, "first") {
				select {
				case early <- o.Text:
				default:
				}
			}
		})
		done <- res
	}()
	select {
	case text := <-early:
		if strings.Contains(text, "second") {
			t.Errorf("the first update with output already has the end: %q", text)
		}
		select {
		case <-done:
			t.Error("the update arrived only after the command ended")
		default:
		}
	case <-done:
		t.Fatal("the command ended before any live output")
	case <-time.After(10 * time.Second):
		t.Fatal("no live output")
	}
	res := <-done
	if got := field(t, res.Text(), "Stdout"); got != "first" {
		t.Errorf("stdout starts %q", got)
	}
	mu.Lock()
	n := len(all)
	mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(all) != n {
		t.Error("live output arrived after Execute returned")
	}
}

func TestShellLiveOutputKeepsTheEnd(t *testing.T) {
	_, sh := shellTestEnv(t, nil)
	var cut string
	res, updates, err := execShell(t, context.Background(), sh, &tools.Call{}, map[string]any{
		"command": "yes 0123456789 | head -c 200000; sleep 0.5; echo END",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range updates {
		if strings.HasPrefix(u, "[… ") {
			cut = u
		}
	}
	if cut == "" {
		t.Fatalf("no update was cut (%d updates)", len(updates))
	}
	first, rest, _ := strings.Cut(cut, "\n")
	if !regexp.MustCompile(`^\[… \d+ bytes omitted\]$`).MatchString(first) || len(rest) > 64<<10 {
		t.Errorf("cut update starts %q and keeps %d bytes", first, len(rest))
	}
	n, _ := strconv.Atoi(strings.Fields(first)[1])
	if n+len(rest) < 200000 {
		t.Errorf("omitted %d + kept %d is less than the output", n, len(rest))
	}
	if res.Error != nil {
		t.Error(res.Error.Message)
	}
}

func TestShellBinaryOutput(t *testing.T) {
	_, sh := shellTestEnv(t, nil)
	res, updates, err := execShell(t, context.Background(), sh, &tools.Call{}, map[string]any{
		"command": `printf 'ab\000cd'; sleep 0.3; printf 'more'; sleep 0.3; echo text >&2`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := field(t, res.Text(), "Stdout"); got != "[binary output: 9 bytes]" {
		t.Errorf("stdout %q", got)
	}
	if got := field(t, res.Text(), "Stderr"); got != "text" {
		t.Errorf("stderr %q", got)
	}
	if len(updates) == 0 || updates[0] != "[binary output: live display stopped]" {
		t.Fatalf("updates %q", updates)
	}
	for _, u := range updates[1:] {
		if !regexp.MustCompile(`^\[binary output: \d+\.\d KB received\]$`).MatchString(u) {
			t.Errorf("later update %q", u)
		}
	}
	if res.Display != tools.Markdown("[binary output: 9 bytes]\ntext") {
		t.Errorf("display %q", res.Display)
	}
}

// TestShellHugeOutput: 11 MB of output is saved whole and truncated per
// §2.8 without being held in memory (the spool's bound is pinned by
// TestSpoolBoundsMemory); no temporary file is left behind.
func TestShellHugeOutput(t *testing.T) {
	e, sh := shellTestEnv(t, nil)
	scratch := t.TempDir()
	t.Setenv("TMPDIR", scratch)
	res := shellRun(t, sh, map[string]any{"command": "yes 0123456789 | head -n 1000000; echo done >&2"})
	text := res.Text()
	if !strings.HasPrefix(text, "The output is too long, so only its start and end are shown;") {
		t.Fatalf("text starts %q", text[:min(len(text), 200)])
	}
	if len(text) > e.Threshold()+1000 {
		t.Errorf("the result holds %d bytes", len(text))
	}
	m := regexp.MustCompile(`The whole output is in (\S+); read it`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no file named in\n%s", text[:400])
	}
	file := m[1]
	if filepath.Dir(file) != e.ProjectTempDir() || !strings.HasPrefix(filepath.Base(file), "run_shell_command_") {
		t.Errorf("saved to %s", file)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	count, lines := 0, 0
	var last string
	for sc.Scan() {
		lines++
		if sc.Text() == "0123456789" || sc.Text() == "Stdout: 0123456789" {
			count++
		}
		last = sc.Text()
	}
	if count != 1000000 || lines != 1000000+8 || !strings.HasPrefix(last, "Process Group PGID: ") {
		t.Errorf("saved file: %d output lines, %d lines, last %q", count, lines, last)
	}
	if !strings.HasSuffix(text, last) || !strings.Contains(text, "Stderr: done\n") {
		t.Errorf("the tail does not end the output:\n%s", text[len(text)-300:])
	}
	d, _ := res.Display.(tools.Markdown)
	if len(d) > 70<<10 || !strings.HasPrefix(string(d), "[… ") || !strings.HasSuffix(string(d), "Output truncated; the whole output is in "+file) {
		t.Errorf("display of %d bytes: %q … %q", len(d), d[:min(len(d), 40)], d[max(0, len(d)-120):])
	}
	if left, _ := os.ReadDir(scratch); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestShellCancelKillsGroup: cancelling during `sleep 60` with a child
// process returns promptly with the context's error, and no process of the
// group is left within a second.
func TestShellCancelKillsGroup(t *testing.T) {
	e, sh := shellTestEnv(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	params, terr := tools.PrepareArgs(sh, argsJSON(t, map[string]any{"command": "sleep 60 & sleep 60; wait"}))
	if terr != nil {
		t.Fatal(terr.Message)
	}
	type outcome struct {
		res tools.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := tools.Guard(ctx, sh, &tools.Call{SessionID: "cancel"}, params, nil)
		done <- outcome{res, err}
	}()
	var pgid int
	waitFor(t, 5*time.Second, "the process group", func() bool {
		g := e.Processes.PGIDs("cancel")
		if len(g) == 1 {
			pgid = g[0]
		}
		return pgid != 0 && len(procGroup(t, pgid)) >= 3 // bash and two sleeps
	})
	cancel()
	select {
	case o := <-done:
		if o.err != context.Canceled {
			t.Errorf("a cancelled call returned %v, %+v", o.err, o.res)
		}
	case <-time.After(10 * time.Second):
		// A bound for a hang, not a figure: the command sleeps far longer.
		t.Fatal("the call did not return within 10 s of the cancellation")
	}
	waitGroupGone(t, pgid, 10*time.Second)
	if g := e.Processes.PGIDs(""); len(g) != 0 {
		t.Errorf("groups still tracked: %v", g)
	}
}

// TestShellLeftoverProcesses: a foreground command that leaves a process
// running reports it, and KillSession/KillAll stop it.
func TestShellLeftoverProcesses(t *testing.T) {
	e, sh := shellTestEnv(t, nil)
	res := shellRun(t, sh, map[string]any{"command": "sleep 30 >/dev/null 2>&1 & echo started"})
	pgid := pgidOf(t, res.Text())
	pids := field(t, res.Text(), "Background PIDs")
	if _, err := strconv.Atoi(pids); err != nil {
		t.Fatalf("Background PIDs %q", pids)
	}
	if !slices.Contains(e.Processes.PGIDs("s"), pgid) {
		t.Fatalf("leftover group %d not tracked: %v", pgid, e.Processes.PGIDs(""))
	}
	e.Processes.KillSession("other")
	if len(procGroup(t, pgid)) == 0 {
		t.Fatal("another session's end killed the group")
	}
	e.Processes.KillSession("s")
	waitGroupGone(t, pgid, time.Second)

	// A command that leaves nothing is not tracked.
	res = shellRun(t, sh, map[string]any{"command": "true"})
	if slices.Contains(e.Processes.PGIDs(""), pgidOf(t, res.Text())) || field(t, res.Text(), "Background PIDs") != "(none)" {
		t.Error("a finished command's group is tracked")
	}
}

func TestShellSignalDisplay(t *testing.T) {
	_, sh := shellTestEnv(t, nil)
	res := shellRun(t, sh, map[string]any{"command": "kill -KILL $$"})
	if field(t, res.Text(), "Signal") != "SIGKILL" || field(t, res.Text(), "Exit Code") != "(none)" ||
		res.Display != tools.Markdown("Command terminated by signal: SIGKILL") {
		t.Errorf("text\n%s\ndisplay %q", res.Text(), res.Display)
	}
}

func TestShellBackgroundThatExits(t *testing.T) {
	e, sh := shellTestEnv(t, nil)
	res := shellRun(t, sh, map[string]any{"command": "echo quick; echo oops >&2", "is_background": true})
	text := res.Text()
	if field(t, text, "Stdout") != "quick" || field(t, text, "Stderr") != "oops" || field(t, text, "Exit Code") != "0" {
		t.Errorf("a background command that exits at once gives the foreground result:\n%s", text)
	}
	files, _ := filepath.Glob(filepath.Join(e.ProjectTempDir(), "background", "s", "shell_*.output"))
	if len(files) != 1 {
		t.Fatalf("background files %v", files)
	}
	// Both streams go to the file as they arrive; two pipes have no order
	// between them.
	waitFor(t, 2*time.Second, "the background file", func() bool {
		b, _ := os.ReadFile(files[0])
		return string(b) == "quick\noops\n" || string(b) == "oops\nquick\n"
	})
}

// The session's scheduler asks this of tools that plan mode allows only
// for some arguments (session.PlanModeChecker).
var _ interface {
	AllowedInPlanMode(params map[string]any) bool
} = (*tools.Shell)(nil)

// In a folder that is not trusted, git's read-only commands ask, because
// the repository's own configuration can make them run programs: here
// core.fsmonitor makes `git status` run a script of the repository's
// choosing. Trusting the folder lets them run unasked again.
func TestUntrustedRepositoryGitAsks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	e, sh := shellTestEnv(t, nil)
	root := e.Root
	marker := filepath.Join(t.TempDir(), "fsmonitor-ran")
	hook := filepath.Join(root, "monitor.sh")
	os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)
	for _, args := range [][]string{{"init", "-q"}, {"config", "core.fsmonitor", hook}} {
		if out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	// The premise: git status really runs the repository's program.
	cmd := exec.Command("git", "status", "--short")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git status: %v %s", err, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("git status did not run core.fsmonitor (%v); the threat this guards against is not what it seems", err)
	}

	for _, c := range []string{"git status", "git diff | head", "ls && git log -1"} {
		conf, terr := tools.GuardConfirm(context.Background(), sh, &tools.Call{}, map[string]any{"command": c})
		if terr != nil || conf == nil {
			t.Errorf("untrusted: %q does not ask (%v, %v)", c, conf, terr)
		}
		if sh.AllowedInPlanMode(map[string]any{"command": c}) {
			t.Errorf("untrusted: %q is allowed in plan mode", c)
		}
	}
	if conf, _ := tools.GuardConfirm(context.Background(), sh, &tools.Call{}, map[string]any{"command": "ls -la"}); conf != nil {
		t.Errorf("untrusted: ls asks")
	}
	trusted := true
	e.Env.Settings().SetEditorTrust(&trusted)
	if conf, terr := tools.GuardConfirm(context.Background(), sh, &tools.Call{}, map[string]any{"command": "git status"}); conf != nil || terr != nil {
		t.Errorf("trusted: git status asks: %+v %v", conf, terr)
	}
}

// timeoutRange starts every refusal of a timeout that is not whole
// milliseconds in range: it names the unit and the range.
const timeoutRange = `Argument "timeout" is in milliseconds and must be a whole number from 1000 (1 second) to 600000 (10 minutes)`

// Models send seconds now and then. A timeout of 1.5 once ran the command
// with a 2 ms limit, rounded up from 1.5 ms; now a fraction, or a value
// under one second, is refused with the unit and the range, and a value
// that reads as seconds gets the milliseconds to send.
func TestShellTimeoutIsWholeMilliseconds(t *testing.T) {
	_, sh := shellTestEnv(t, nil)
	for _, c := range []struct {
		timeout any
		msg     string
	}{
		{1.5, timeoutRange + "; 1.5 is not a whole number. For 1.5 seconds, send 1500."},
		{2500.25, timeoutRange + "; 2500.25 is not a whole number."},
		{30, timeoutRange + "; 30 is less than 1 second. For 30 seconds, send 30000."},
		{999, timeoutRange + "; 999 is less than 1 second."},
		{0.0004, timeoutRange + "; 0.0004 is not a whole number."},
	} {
		_, terr := tools.PrepareArgs(sh, argsJSON(t, map[string]any{"command": "echo ran", "timeout": c.timeout}))
		if terr == nil {
			t.Errorf("timeout %v was accepted", c.timeout)
			continue
		}
		if terr.Type != tools.ErrorInvalidToolParams || terr.Message != c.msg {
			t.Errorf("timeout %v: got %s %q, want %q", c.timeout, terr.Type, terr.Message, c.msg)
		}
	}
	// The floor itself is allowed, and a whole number written as a
	// float is still whole.
	for _, ok := range []any{1000, 1000.0, 600000} {
		if _, terr := tools.PrepareArgs(sh, argsJSON(t, map[string]any{"command": "echo ran", "timeout": ok})); terr != nil {
			t.Errorf("timeout %v refused: %s", ok, terr.Message)
		}
	}
}
