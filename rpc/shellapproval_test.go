package rpc_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
)

// shellForm is a command that changes something. {M} is a marker file that
// must not appear, {V} a victim file whose content must not change, {D}
// the workspace folder.
type shellForm struct {
	cmd string
	// live: approved, the form really does create {M} or change {V} here
	// (some need a terminal, a program or a setting the test cannot give).
	live bool
}

// shellForms are the command forms that must ask before running (tools.md
// §6.3): each writes or runs something, through substitutions,
// redirections, the write options of read-only programs, wrappers, quoting
// tricks, inline functions and aliases, nested shells, eval and heredocs.
var shellForms = []shellForm{
	// Plain writers and redirections.
	{"touch {M}", true},
	{"echo x > {M}", true},
	{"echo x >> {M}", true},
	{"ls &> {M}", true},
	{"ls &>> {M}", true},
	{"ls >| {M}", true},
	{"ls >& {M}", true},
	{"ls 2> {M}", true},
	{"cat /dev/null 1<> {M}", true},
	{"{ ls; } > {M}", true},
	{"(ls) > {M}", true},
	{"ls | cat > {M}", true},
	{"cat > {M} <<EOF\nx\nEOF", true},
	{"printf x | tee {M}", true},
	{"dd of={M} status=none < /dev/null", true},
	// Command and process substitution.
	{"echo $(touch {M})", true},
	{"echo `touch {M}`", true},
	{"echo \"$(touch {M})\"", true},
	{"x=$(touch {M})", true},
	{"cat <(touch {M})", true},
	{"ls > >(cat > {M})", true},
	{"cat <<EOF\n$(touch {M})\nEOF", true},
	{"for f in $(touch {M}); do ls; done", true},
	{"[[ -n $(touch {M}) ]]", true},
	// find's writers and runners.
	{"find {D} -maxdepth 0 -exec touch {M} \\;", true},
	{"find {D} -maxdepth 0 -execdir touch {M} \\;", true},
	{"find {D} -maxdepth 0 -fprint {M}", true},
	{"find {D} -maxdepth 0 -fprint0 {M}", true},
	{"find {D} -maxdepth 0 -fprintf {M} %p", true},
	{"find {D} -maxdepth 0 -fls {M}", true},
	{"find {D} -maxdepth 0 -ok touch {M} \\;", false},
	{"find {V} -delete", true},
	{"find {V} -{delete,print}", true},
	{"find {V} {-delete,}", true},
	{"find {D} -maxdepth 0 {-exec,touch,{M},\\;}", true},
	// git.
	{"git -c alias.zz='!touch {M}' zz", true},
	{"git log --output={M}", true},
	{"git diff --output={M} HEAD", true},
	{"git log {--output={M},}", true},
	{"git grep --open-files-in-pager='touch {M}' keep", true},
	{"git grep --open='touch {M}' keep", true},
	{"git grep -O'touch {M}' keep", true},
	// sed and awk.
	{"sed -i s/keep/lost/ {V}", true},
	{"sed --in-place s/keep/lost/ {V}", true},
	{"sed -n 'w {M}' {V}", true},
	{"sed 's/k/K/w {M}' {V}", true},
	{"sed -n '1e touch {M}' {V}", true},
	{"sed 's|.*|touch {M}|e' {V}", true},
	{"awk 'BEGIN{system(\"touch {M}\")}'", true},
	{"awk 'BEGIN{print 1 > \"{M}\"}'", true},
	{"awk 'BEGIN{print 1 | \"cat > {M}\"}'", true},
	{"awk 'BEGIN{\"touch {M}\" | getline}'", true},
	// sort, uniq.
	{"sort -o {M} {V}", true},
	{"sort --output={M} {V}", true},
	{"uniq {V} {M}", true},
	// Wrappers.
	{"env touch {M}", true},
	{"echo {M} | xargs touch", true},
	{"timeout 5 touch {M}", true},
	{"nice touch {M}", true},
	{"command touch {M}", true},
	{"builtin eval 'touch {M}'", true},
	{"exec touch {M}", true},
	{"time touch {M}", true},
	{"! touch {M}", true},
	{"coproc touch {M}", true},
	// Quoting and escaping.
	{"t'ouc'h {M}", true},
	{"\"touch\" {M}", true},
	{"\\touch {M}", true},
	{"to\\uch {M}", true},
	{"$'touch' {M}", true},
	{"${T:-touch} {M}", true},
	{"$(echo touch) {M}", true},
	{"set -- touch {M}; \"$@\"", true},
	// Functions, aliases, nested shells, eval, source, traps.
	{"f() { touch {M}; }; f", true},
	{"function ls { touch {M}; }; ls", true},
	{"shopt -s expand_aliases\nalias l='touch {M}'\nl", true},
	{"eval 'touch {M}'", true},
	{"bash -c 'touch {M}'", true},
	{"sh -c 'touch {M}'", true},
	{"echo 'touch {M}' | bash", true},
	{". <(echo 'touch {M}')", true},
	{"source /dev/stdin <<< 'touch {M}'", true},
	{"trap 'touch {M}' EXIT", true},
	// Chains: the writer is one sub-command of several.
	{"ls; touch {M}", true},
	{"ls && touch {M}", true},
	{"ls | touch {M}", true},
	{"ls & touch {M}", true},
	{"ls\ntouch {M}", true},
	{"(touch {M})", true},
	{"{ touch {M}; }", true},
	{"if true; then touch {M}; fi", true},
	{"while true; do touch {M}; break; done", true},
	{"case x in x) touch {M};; esac", true},
	// Environment that makes a read-only command run a workspace program
	// ({D}/ls creates the file it is given).
	{"PATH={D}:$PATH ls {M}", true},
	{"PATH={D}; ls {M}", true},
	{"printf -v PATH %s {D}; ls {M}", true},
	{"LESSOPEN='|touch {M} %s' less {V}", true},
	// Bash evaluates variable contents as arithmetic, and arithmetic runs
	// the command substitution in an array subscript.
	{"x='a[$(touch {M})]'; echo $((x))", true},
	{"x='a[$(touch {M})]'; echo $[x]", true},
	{"x='a[$(touch {M})]'; echo ${y[x]}", true},
	{"x='a[$(touch {M})]'; y=abc; echo ${y:x}", true},
	{"x='a[$(touch {M})]'; y=abc; echo \"${y:0:x}\"", true},
	{"y='a[$(touch {M})]'; echo ${!y}", true},
	{"x='$(touch {M})'; echo ${x@P}", true},
	{"x='a[$(touch {M})]'; a[x]=1; echo", true},
	{"x='a[$(touch {M})]'; for ((i=x; i<0; i++)); do echo; done", true},
	{"x='a[$(touch {M})]'; case $((x)) in *) echo;; esac", true},
	{"x='a[$(touch {M})]'; cat <<EOF\n$((x))\nEOF", true},
	{"x='a[$(touch {M})]'; ls > /dev/null${y[x]}", true},
	{"x='a[$(touch {M})]'; y=abc; echo ${#y[x]}", true},
	{"x='a[$(touch {M})]'; echo $(( x + 1 ))", true},
	{"x='a[$(touch {M})]'; echo ${y[x]:-z}", true},
	{"x='a[$(touch {M})]'; echo ${y:-${z[x]}}", true},
	{"x='a[$(touch {M})]'; y=ab; echo ${y/#/${z[x]}}", true},
	{"x='a[$(touch {M})]'; case a in ${y[x]}) echo;; esac", true},
	{"x='a[$(touch {M})]'; for i in ${y[x]}; do echo; done", true},
	{"x='a[$(touch {M})]'; cat <<<${y[x]}", true},
	{"x='a[$(touch {M})]'; y[x]+=1; echo", true},
	{"x='a[$(touch {M})]'; [[ x -eq 0 ]]", true},
	{"x='a[$(touch {M})]'; ((x))", true},
	{"x='a[$(touch {M})]'; let x", true},
	{"x='a[$(touch {M})]'; declare -i y=x", true},
	{"x='a[$(touch {M})]'; echo \"${!x}\"", true},
	{"x='$(touch {M})'; echo \"${x@P}\"", true},
	{"x='a[$(touch {M})]'; while (( x )); do break; done", true},
	// awk reads a backslash-newline as one line.
	{"awk 'BEGIN{system \\\n(\"touch {M}\")}'", true},
	{"awk 'BEGIN{print \"x\" \\\n> \"{M}\"}'", true},
	{"awk 'BEGIN{print \"x\" | \"cat > {M}\"}'", true},
	{"awk 'BEGIN { \"touch {M}\" | getline }'", true},
	// A lesskey file's #env section sets LESSOPEN, run on the file shown.
	{"less --lesskey-src={D}/lesskeys {V}", true},
	// A rule-free redirection of a read-only command's output.
	{"git status > {M}", true},
	{"git status >> {V}", true},
}

// Each form is sent by the scripted model as a run_shell_command call in a
// default-mode session; the editor rejects every permission request. The
// request must have been made, and the command must not have run. Then
// the same forms, approved, prove that they do what they claim.
func TestShellFormsAskAndDoNotRunWhenRejected(t *testing.T) {
	if len(shellForms) < 130 {
		t.Fatalf("only %d forms", len(shellForms))
	}
	a := startAgent(t, "default")
	prepareShellWorkspace(t, a.root)
	var mu sync.Mutex
	asked := map[string]string{} // tool call id -> command
	a.e.Handle("qwen/requestPermission", func(params json.RawMessage) (any, error) {
		var p struct {
			ToolCall struct {
				ToolCallID string          `json:"toolCallId"`
				RawInput   json.RawMessage `json:"rawInput"`
			} `json:"toolCall"`
		}
		_ = json.Unmarshal(params, &p)
		var in struct{ Command string }
		_ = json.Unmarshal(p.ToolCall.RawInput, &in)
		mu.Lock()
		asked[p.ToolCall.ToolCallID] = in.Command
		mu.Unlock()
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "cancel"}}, nil
	})
	for i, f := range shellForms {
		if strings.Contains(f.cmd, "git ") && !programsInstalled("git ") {
			continue // no repository to run it in
		}
		cmd := expandForm(f.cmd, a.root, i)
		id := fmt.Sprintf("form%d", i)
		args, _ := json.Marshal(map[string]any{"command": cmd})
		a.model.Push(modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: id, Name: "run_shell_command", Arguments: string(args)}}})
		if _, err := a.prompt("run it"); err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
		mu.Lock()
		got, ok := asked[id]
		mu.Unlock()
		if !ok || got != cmd {
			t.Errorf("%q ran without a permission request (asked: %q)", cmd, got)
		}
		if broke := formEffects(a.root, i); broke != "" {
			t.Errorf("%q ran although rejected: %s", cmd, broke)
		}
	}

	// Nothing started in the background either.
	for i, f := range shellForms {
		if broke := formEffects(a.root, i); broke != "" {
			t.Errorf("%q ran although rejected: %s", f.cmd, broke)
		}
	}

	// Approved, the live forms do what they claim, so the markers above
	// prove something. One batch, each asked and allowed once.
	b := startAgent(t, "default")
	prepareShellWorkspace(t, b.root)
	b.e.Handle("qwen/requestPermission", func(json.RawMessage) (any, error) {
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_once"}}, nil
	})
	var calls []modeltest.ToolCall
	var live []int
	for i, f := range shellForms {
		if !f.live || !programsInstalled(f.cmd) {
			continue
		}
		args, _ := json.Marshal(map[string]any{"command": expandForm(f.cmd, b.root, i), "timeout": 20000})
		calls = append(calls, modeltest.ToolCall{ID: fmt.Sprintf("live%d", i), Name: "run_shell_command", Arguments: string(args)})
		live = append(live, i)
	}
	// One response may make at most 128 calls: send them in batches.
	for len(calls) > 0 {
		n := min(len(calls), 100)
		b.model.Push(modeltest.Response{ToolCalls: calls[:n]}, modeltest.Response{Text: "done"})
		if _, err := b.prompt("run them"); err != nil {
			t.Fatal(err)
		}
		calls = calls[n:]
	}
	for _, i := range live {
		if formEffects(b.root, i) == "" {
			t.Errorf("%q approved had no effect, so its rejection proves nothing", shellForms[i].cmd)
		}
	}
}

func expandForm(cmd, root string, i int) string {
	return strings.NewReplacer(
		"{M}", filepath.Join(root, "marks", fmt.Sprintf("m%d", i)),
		"{V}", filepath.Join(root, "victims", fmt.Sprintf("v%d", i)),
		"{D}", root,
	).Replace(cmd)
}

// formEffects describes what form i changed: its marker exists, or its
// victim is gone or changed.
func formEffects(root string, i int) string {
	var out []string
	if _, err := os.Lstat(filepath.Join(root, "marks", fmt.Sprintf("m%d", i))); err == nil {
		out = append(out, "marker created")
	}
	data, err := os.ReadFile(filepath.Join(root, "victims", fmt.Sprintf("v%d", i)))
	if err != nil || string(data) != "keep\n" {
		out = append(out, fmt.Sprintf("victim now %q (%v)", data, err))
	}
	return strings.Join(out, "; ")
}

// prepareShellWorkspace makes the root a git repository holding a file to
// grep, one victim file per form, a marker folder, and a workspace program
// named ls that creates the file named by its argument.
func prepareShellWorkspace(t *testing.T, root string) {
	t.Helper()
	for _, d := range []string{"marks", "victims"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := range shellForms {
		if err := os.WriteFile(filepath.Join(root, "victims", fmt.Sprintf("v%d", i)), []byte("keep\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A workspace program named ls that creates the file it is given.
	if err := os.WriteFile(filepath.Join(root, "ls"), []byte("#!/bin/bash\n: > \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A key-binding file whose #env section makes less run a command
	// that empties the file it shows.
	if err := os.WriteFile(filepath.Join(root, "lesskeys"), []byte("#env\nLESSOPEN=|cp /dev/null %s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "keep.txt"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !programsInstalled("git ") {
		return
	}
	for _, args := range [][]string{{"init", "-q", "."}, {"add", "keep.txt"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
}

// programsInstalled reports whether the programs a form relies on are
// installed, so that its approved run can have its effect.
func programsInstalled(form string) bool {
	for _, prog := range []string{"less", "git", "xargs", "timeout", "nice", "dd", "tee", "awk", "sed", "find", "sort", "uniq"} {
		if strings.Contains(form, prog+" ") {
			if _, err := exec.LookPath(prog); err != nil {
				return false
			}
		}
	}
	return true
}

// Plan mode runs only what is judged read-only: none of the forms runs
// there, and none is asked about (plan mode refuses, it does not ask).
func TestShellFormsDoNotRunInPlanMode(t *testing.T) {
	a := startAgent(t, "plan")
	prepareShellWorkspace(t, a.root)
	var mu sync.Mutex
	var asked []string
	a.e.Handle("qwen/requestPermission", func(params json.RawMessage) (any, error) {
		mu.Lock()
		asked = append(asked, string(params))
		mu.Unlock()
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "proceed_once"}}, nil
	})
	var calls []modeltest.ToolCall
	for i, f := range shellForms {
		args, _ := json.Marshal(map[string]any{"command": expandForm(f.cmd, a.root, i)})
		calls = append(calls, modeltest.ToolCall{ID: fmt.Sprintf("plan%d", i), Name: "run_shell_command", Arguments: string(args)})
	}
	for len(calls) > 0 {
		n := min(len(calls), 100)
		a.model.Push(modeltest.Response{ToolCalls: calls[:n]}, modeltest.Response{Text: "done"})
		if _, err := a.prompt("run them"); err != nil {
			t.Fatal(err)
		}
		calls = calls[n:]
	}
	for i, f := range shellForms {
		if broke := formEffects(a.root, i); broke != "" {
			t.Errorf("%q ran in plan mode: %s", f.cmd, broke)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 0 {
		t.Errorf("plan mode asked %d times: %s", len(asked), asked[0])
	}
}

// In a trusted folder, git aimed at a repository outside the roots asks:
// that repository's core.fsmonitor (here: a program that leaves a marker)
// is not the workspace's. Rejected, nothing runs; approved, the marker
// appears, so the rejection proves something.
func TestGitOutsideTheRootsAsks(t *testing.T) {
	if !programsInstalled("git ") {
		t.Skip("git is not installed")
	}
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	marker := filepath.Join(t.TempDir(), "fsmonitor-ran")
	monitor := filepath.Join(outside, "monitor.sh")
	os.WriteFile(monitor, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)
	for _, args := range [][]string{{"init", "-q"}, {"config", "core.fsmonitor", monitor}} {
		if out, err := exec.Command("git", append([]string{"-C", outside}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	start := func(answer string) (*agent, *[]string) {
		a := startAgentWith(t, "default", rpc.Options{}, func(p *rpctest.InitParams) {
			p.InitializationOptions.(map[string]any)["workspaceTrusted"] = true
		})
		prepareShellWorkspace(t, a.root)
		var mu sync.Mutex
		var asked []string
		a.e.Handle("qwen/requestPermission", func(params json.RawMessage) (any, error) {
			mu.Lock()
			asked = append(asked, string(params))
			mu.Unlock()
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": answer}}, nil
		})
		return a, &asked
	}
	a, asked := start("cancel")
	a.shell(t, "inside", "git status --short")
	if len(*asked) != 0 {
		t.Fatalf("git status in the workspace's own repository asked")
	}
	forms := []string{"git -C " + outside + " status", "cd " + outside + " && git status", "cd " + outside + "; git diff"}
	for i, c := range forms {
		a.rejectedShell(t, fmt.Sprintf("out%d", i), c)
		if len(*asked) != i+1 {
			t.Errorf("%q ran without asking", c)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the other repository's fsmonitor ran")
	}
	b, _ := start("proceed_once")
	b.shell(t, "approved", forms[0])
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("approved, %q did not run the fsmonitor: the test proves nothing", forms[0])
	}
}
