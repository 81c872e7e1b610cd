package session_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// memoryFixture is a folder whose own settings name memory files, with
// secrets around it, and a manager whose model records its requests.
type memoryFixture struct {
	base, root, home string
	mgr              *session.Manager
	model            *modeltest.Server
}

func newMemoryFixture(t *testing.T, trusted bool, settings string) *memoryFixture {
	t.Helper()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	f := &memoryFixture{base: base, root: filepath.Join(base, "W"), home: filepath.Join(base, "home", ".qwen")}
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(f.root, ".qwen", "settings.json"), settings)
	write(filepath.Join(f.root, "QWEN.md"), "MEMORY-OK-ROOT")
	write(filepath.Join(f.root, "sub", "QWEN.md"), "MEMORY-OK-SUB")
	write(filepath.Join(f.home, "QWEN.md"), "MEMORY-OK-GLOBAL")
	write(filepath.Join(f.home, "settings.json"), `{"marker": "SECRET-USER-SETTINGS"}`)
	write(filepath.Join(f.home, "notes.txt"), "SECRET-QWEN-FOLDER-TXT")
	write(filepath.Join(base, "outside.md"), "SECRET-DOTDOT")
	write(filepath.Join(base, "home", ".ssh", "id_rsa"), "SECRET-SSH-KEY")
	write(filepath.Join(base, "linked.md"), "SECRET-LINK")
	write(filepath.Join(base, "linked-sub.md"), "SECRET-LINK-SUB")
	if err := os.Symlink(filepath.Join(base, "linked.md"), filepath.Join(f.root, "LINK.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "linked-sub.md"), filepath.Join(f.root, "sub", "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if trusted {
		write(filepath.Join(f.home, workspace.TrustFileName), `{"`+f.root+`": "TRUST_FOLDER"}`)
	}
	ws := workspace.New(workspace.Options{Roots: []string{f.root}, Settings: workspace.SettingsOptions{
		UserDir: f.home, SystemPath: filepath.Join(base, "etc.json"), Getenv: func(string) (string, bool) { return "", false }}})
	t.Cleanup(func() { ws.Close() })
	if got := ws.Settings.Trust().Trusted; got != trusted {
		t.Fatalf("trusted = %v, want %v: %+v", got, trusted, ws.Settings.Trust())
	}
	f.model = modeltest.Start(t, modeltest.Response{Text: "ok"})
	f.mgr = session.NewManager(session.Options{
		Env:   &tools.Env{Workspace: ws, QwenHome: f.home},
		Tools: fakeTools(nil),
		Host:  &recHost{},
		NewModel: func() (session.Model, error) {
			return session.NewOpenAIModel(session.ModelConfig{Name: "scripted", BaseURL: f.model.URL}, session.RetryPolicy{Attempts: 1, Base: time.Millisecond, Max: time.Second}), nil
		},
	})
	return f
}

// systemPrompt runs one prompt and returns the system message the model
// received.
func (f *memoryFixture) systemPrompt(t *testing.T) string {
	t.Helper()
	info, err := f.mgr.NewSession("", "default")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := f.mgr.Session(info.ID)
	if _, err := s.Prompt(t.Context(), []session.ContentBlock{{Type: "text", Text: "hello"}}); err != nil {
		t.Fatal(err)
	}
	reqs := f.model.Requests()
	if len(reqs) == 0 || len(reqs[0].Messages) == 0 || reqs[0].Messages[0].Role != "system" {
		t.Fatalf("no system message in %+v", reqs)
	}
	return reqs[0].Messages[0].Text()
}

// Regression: context.fileName from a folder's settings held paths, and
// the files they led to (outside the folder, the user's keys and settings)
// went into the system prompt. Names are now plain file names, looked up
// in the roots (symlinks resolved) and, for Markdown names, in the user's
// qwen folder; nothing else reaches the model, trusted folder or not.
func TestContextFileNameNeverLeavesTheRoots(t *testing.T) {
	passwd, _ := os.ReadFile("/etc/passwd")
	passwdLine, _, _ := strings.Cut(string(passwd), "\n")
	deep := strings.Repeat("../", 30)
	for _, trusted := range []bool{false, true} {
		name := map[bool]string{false: "untrusted", true: "trusted"}[trusted]
		t.Run(name, func(t *testing.T) {
			settings := `{"context": {"fileName": [
				"../outside.md", "` + deep + `etc/passwd", "/etc/passwd", "~/.ssh/id_rsa", "../.ssh/id_rsa",
				"settings.json", "notes.txt", "LINK.md", "..", "sub\\..\\..\\outside.md", "QWEN.md", "AGENTS.md",
				"/proc/self/environ", "` + deep + `proc/self/environ"
			]}}`
			f := newMemoryFixture(t, trusted, settings)
			sys := f.systemPrompt(t)
			for _, want := range []string{"MEMORY-OK-ROOT", "MEMORY-OK-SUB", "MEMORY-OK-GLOBAL"} {
				if !strings.Contains(sys, want) {
					t.Errorf("%s: the memory file with %s is missing from the system prompt:\n%s", name, want, sys)
				}
			}
			for _, secret := range []string{"SECRET-DOTDOT", "SECRET-SSH-KEY", "SECRET-USER-SETTINGS", "SECRET-QWEN-FOLDER-TXT",
				"SECRET-LINK", "SECRET-LINK-SUB", "PATH=", "HOME="} {
				if strings.Contains(sys, secret) {
					t.Errorf("%s: %s reached the model:\n%s", name, secret, sys)
				}
			}
			if passwdLine != "" && strings.Contains(sys, passwdLine) {
				t.Errorf("%s: /etc/passwd reached the model:\n%s", name, sys)
			}
		})
	}
}

// A FIFO (or any non-regular file) named like a memory file is skipped;
// opening it would block the session's start for ever.
func TestMemoryFileThatIsAFIFOIsSkipped(t *testing.T) {
	f := newMemoryFixture(t, false, `{"context": {"fileName": ["PIPE.md", "QWEN.md"]}}`)
	if err := mkfifo(filepath.Join(f.root, "PIPE.md")); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	sys := f.systemPrompt(t)
	if !strings.Contains(sys, "MEMORY-OK-ROOT") || strings.Contains(sys, "PIPE.md") {
		t.Errorf("system prompt:\n%s", sys)
	}
}
