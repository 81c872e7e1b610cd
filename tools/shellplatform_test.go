package tools

import (
	"slices"
	"strings"
	"testing"

	"github.com/qwen-ls/qwen-ls/tools/shellsafe"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/simplifiedchinese"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestPickShellForEachSystem(t *testing.T) {
	cases := []struct {
		goos     string
		env      map[string]string
		kind     string
		argv     []string
		cmdLine  string
		analysed bool
		stopHint string
	}{
		{goos: "linux", kind: shellBash, argv: []string{"bash", "-c", "ls -l"}, analysed: true, stopHint: "kill -- -42"},
		{goos: "darwin", env: map[string]string{"ComSpec": `C:\Windows\system32\cmd.exe`}, kind: shellBash, argv: []string{"bash", "-c", "ls -l"}, analysed: true, stopHint: "kill -- -42"},
		{goos: "windows", kind: shellCmd, argv: []string{"cmd.exe", "/d", "/s", "/c", "ls -l"},
			cmdLine: `"cmd.exe" /d /s /c "ls -l"`, stopHint: "taskkill /T /F /PID 42"},
		{goos: "windows", env: map[string]string{"ComSpec": `"C:\Windows\system32\cmd.exe"`}, kind: shellCmd,
			argv:    []string{`C:\Windows\system32\cmd.exe`, "/d", "/s", "/c", "ls -l"},
			cmdLine: `"C:\Windows\system32\cmd.exe" /d /s /c "ls -l"`, stopHint: "taskkill /T /F /PID 42"},
		{goos: "windows", env: map[string]string{"ComSpec": `C:\Program Files\PowerShell\7\pwsh.exe`}, kind: shellPowerShell,
			argv: []string{`C:\Program Files\PowerShell\7\pwsh.exe`, "-NoProfile", "-Command", "ls -l"}, stopHint: "taskkill /T /F /PID 42"},
		{goos: "windows", env: map[string]string{"ComSpec": `C:\WINDOWS\System32\WindowsPowerShell\v1.0\PowerShell.exe`}, kind: shellPowerShell,
			argv: []string{`C:\WINDOWS\System32\WindowsPowerShell\v1.0\PowerShell.exe`, "-NoProfile", "-Command", "ls -l"}, stopHint: "taskkill /T /F /PID 42"},
		{goos: "windows", env: map[string]string{"MSYSTEM": "MINGW64", "ComSpec": `C:\Windows\system32\cmd.exe`}, kind: shellBash,
			argv: []string{"bash", "-c", "ls -l"}, stopHint: "taskkill /T /F /PID 42"},
		{goos: "windows", env: map[string]string{"TERM": "cygwin"}, kind: shellBash, argv: []string{"bash", "-c", "ls -l"}, stopHint: "taskkill /T /F /PID 42"},
	}
	for _, c := range cases {
		sp := pickShell(c.goos, envOf(c.env))
		if sp.kind != c.kind || !slices.Equal(sp.argv("ls -l"), c.argv) || sp.cmdLine("ls -l") != c.cmdLine {
			t.Errorf("%s %v: got %s %q %q, want %s %q %q", c.goos, c.env, sp.kind, sp.argv("ls -l"), sp.cmdLine("ls -l"), c.kind, c.argv, c.cmdLine)
		}
		if posixAnalysis(c.goos) != c.analysed {
			t.Errorf("%s: analysed %v, want %v", c.goos, !c.analysed, c.analysed)
		}
		if h := stopHint(c.goos, "42"); h != c.stopHint {
			t.Errorf("%s: stop hint %q, want %q", c.goos, h, c.stopHint)
		}
	}
}

// TestCmdLineKeepsTheCommandAsWritten: cmd.exe gets the model's command
// between one pair of quotes, its own quotes and carets untouched.
func TestCmdLineKeepsTheCommandAsWritten(t *testing.T) {
	sp := pickShell("windows", envOf(nil))
	cmd := `findstr /c:"a b" x.txt && echo "done" ^& more`
	if got, want := sp.cmdLine(cmd), `"cmd.exe" /d /s /c "`+cmd+`"`; got != want {
		t.Fatalf("cmdLine = %s, want %s", got, want)
	}
}

// TestWindowsCommandsAskUnlessAnExactRuleAllows runs the approval decision
// for both flavours on any machine: the analysis, then the rules' cover.
func TestWindowsCommandsAskUnlessAnExactRuleAllows(t *testing.T) {
	e := &Env{}
	decide := func(goos, command string, allow, deny []string) (readOnly, allowed bool, denied bool, suggested []string) {
		t.Helper()
		a, err := e.analyzeShellFor(goos, command, "")
		if err != nil {
			t.Fatalf("%s %q: %v", goos, command, err)
		}
		cov := shellsafe.Cover(a.SubCommands, allow, deny)
		conf := ShellConfirmation(command, a.NeedingApproval())
		return a.ReadOnly(), len(cov.Uncovered) == 0 && !a.Substitution, cov.Deny >= 0, conf.Details.(*ExecConfirmation).PermissionRules
	}
	// On Linux a read-only command runs unasked, and a prefix rule
	// allows a longer command.
	if ro, _, _, _ := decide("linux", "ls -l", nil, nil); !ro {
		t.Fatal("linux: ls -l is not read-only")
	}
	if _, ok, _, _ := decide("linux", "npm test --watch", []string{"npm test"}, nil); !ok {
		t.Fatal("linux: Bash(npm test) does not allow npm test --watch")
	}
	// On Windows nothing is read-only, and only the exact rule or a bare
	// one allows.
	for _, cmd := range []string{"ls -l", "dir", "type a.txt", "git status"} {
		if ro, ok, _, _ := decide("windows", cmd, nil, nil); ro || ok {
			t.Errorf("windows: %q runs unasked (read-only %v, allowed %v)", cmd, ro, ok)
		}
	}
	if _, ok, _, _ := decide("windows", "npm test --watch", []string{"npm test"}, nil); ok {
		t.Error("windows: Bash(npm test) allows npm test --watch")
	}
	if _, ok, _, _ := decide("windows", "npm test & del /q *", []string{"npm test"}, nil); ok {
		t.Error("windows: Bash(npm test) allows npm test & del /q *")
	}
	if _, ok, _, _ := decide("windows", "npm test", []string{"npm test *"}, nil); ok {
		t.Error("windows: a wildcard rule allows")
	}
	if _, ok, _, _ := decide("windows", "  npm test ", []string{"npm test"}, nil); !ok {
		t.Error("windows: the exact rule does not allow its command")
	}
	if _, ok, _, _ := decide("windows", "del /q *", []string{"*"}, nil); !ok {
		t.Error("windows: a bare rule does not allow")
	}
	if _, _, denied, _ := decide("windows", `del /q C:\x`, nil, []string{"del"}); !denied {
		t.Error("windows: Bash(del) does not deny del /q")
	}
	_, _, _, rules := decide("windows", "npm run build", nil, nil)
	if !slices.Equal(rules, []string{"Bash(npm run build)"}) {
		t.Errorf("windows: suggested rules %q, want the exact command", rules)
	}
}

func TestOutputDecoder(t *testing.T) {
	if newOutputDecoder(65001) != nil || newOutputDecoder(1) != nil {
		t.Fatal("UTF-8 and unknown code pages must pass bytes through")
	}
	feed := func(d *outputDecoder, chunks ...[]byte) string {
		var out []byte
		for _, c := range chunks {
			out = append(out, d.decode(c)...)
		}
		return string(append(out, d.flush()...))
	}
	// UTF-8 output stays as it is, even with a character cut between
	// two reads.
	utf := []byte("größe ok ✓\r\n")
	if got := feed(newOutputDecoder(437), utf[:3], utf[3:12], utf[12:]); got != string(utf) {
		t.Errorf("UTF-8 through cp437: %q", got)
	}
	// cmd.exe's own messages in the OEM code page.
	oem, _ := charmap.CodePage437.NewEncoder().Bytes([]byte("Größe: 5 Dateien\r\n"))
	if got := feed(newOutputDecoder(437), oem[:2], oem[2:]); got != "Größe: 5 Dateien\r\n" {
		t.Errorf("cp437: %q", got)
	}
	// A double-byte code page, split inside a character.
	gbk, _ := simplifiedchinese.GBK.NewEncoder().Bytes([]byte("找不到文件\r\n"))
	if got := feed(newOutputDecoder(936), gbk[:3], gbk[3:7], gbk[7:]); got != "找不到文件\r\n" {
		t.Errorf("cp936: %q", got)
	}
	// Once a stream is not UTF-8, it stays in the code page.
	mixed, _ := charmap.CodePage850.NewEncoder().Bytes([]byte("é"))
	if got := feed(newOutputDecoder(850), []byte("plain "), mixed, []byte(" ö")); !strings.HasPrefix(got, "plain é") {
		t.Errorf("cp850: %q", got)
	}
}
