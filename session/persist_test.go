package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/session/modeltest"
	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// stored is a workspace, a qwen home and a scripted model shared by the
// managers ("processes") of one test.
type stored struct {
	ws    *workspace.Workspace
	home  string
	root  string
	model *modeltest.Server
	host  *recHost
	env   *tools.Env
}

func newStored(t *testing.T, script ...modeltest.Response) *stored {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "W")
	os.MkdirAll(root, 0o755)
	root, _ = filepath.EvalSymlinks(root)
	home := filepath.Join(base, "home", ".qwen")
	ws := workspace.New(workspace.Options{Roots: []string{root}, Settings: workspace.SettingsOptions{
		UserDir: home, SystemPath: filepath.Join(base, "etc.json"), Getenv: func(string) (string, bool) { return "", false }}})
	ctx, cancel := context.WithCancel(context.Background())
	ws.Start(ctx)
	t.Cleanup(func() { cancel(); ws.Close() })
	return &stored{ws: ws, home: home, root: root, model: modeltest.Start(t, script...), host: &recHost{}, env: &tools.Env{Workspace: ws, QwenHome: home}}
}

// manager is one "process": its own manager over the shared store.
func (st *stored) manager(t *testing.T, ts []tools.Tool) *session.Manager {
	t.Helper()
	m := session.NewManager(session.Options{
		Env:   st.env,
		Tools: fakeTools(ts),
		Host:  st.host,
		Store: session.NewStore(st.home, nil),
		Log:   t.Logf,
		NewModel: func() (session.Model, error) {
			return session.NewOpenAIModel(session.ModelConfig{Name: "scripted", BaseURL: st.model.URL}, session.RetryPolicy{Attempts: 1, Base: time.Millisecond, Max: time.Millisecond}), nil
		},
	})
	t.Cleanup(m.Close)
	return m
}

func prompt(t *testing.T, s *session.Session, text string) session.PromptResult {
	t.Helper()
	res, err := s.Prompt(context.Background(), []session.ContentBlock{{Type: "text", Text: text}})
	if err != nil {
		t.Fatalf("prompt %q: %v", text, err)
	}
	return res
}

func newSess(t *testing.T, m *session.Manager, mode string) *session.Session {
	t.Helper()
	info, err := m.NewSession("", mode)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m.Session(info.ID)
	return s
}

// A cut last line (a crash in the middle of a write) is skipped and
// reported; the rest of the session loads, and the session goes on
// writing complete lines after it.
func TestTruncatedLastLineIsToleratedAndReported(t *testing.T) {
	st := newStored(t, modeltest.Response{Text: "first answer"}, modeltest.Response{Text: "second answer"})
	m1 := st.manager(t, nil)
	s := newSess(t, m1, "default")
	prompt(t, s, "first question")
	path := s.SessionFile()
	m1.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"message","time":"2026-01-01T00:00:00Z","message":{"role":"assistant","text":"half wri`)
	f.Close()

	m2 := st.manager(t, nil)
	lr, err := m2.Load(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(lr.Problems) != 1 || !strings.Contains(lr.Problems[0], "cut short") {
		t.Fatalf("problems = %q, want the cut last line reported", lr.Problems)
	}
	h := lr.Session.History()
	if len(h) != 2 || h[0].Text != "first question" || h[1].Text != "first answer" {
		t.Fatalf("history = %+v", h)
	}
	prompt(t, lr.Session, "second question")
	m2.Close()

	m3 := st.manager(t, nil)
	lr, err = m3.Load(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(lr.Problems) != 1 || !strings.Contains(lr.Problems[0], "not a valid event") {
		t.Fatalf("problems after more events = %q, want the old cut line skipped", lr.Problems)
	}
	if h := lr.Session.History(); len(h) != 4 || h[3].Text != "second answer" {
		t.Fatalf("history after more events = %+v", h)
	}
}

// Stored sessions are listed most recently updated first, titled by their
// first prompt, next to this process's own.
func TestListOrdersByRecency(t *testing.T) {
	st := newStored(t, modeltest.Response{Text: "a"}, modeltest.Response{Text: "b"}, modeltest.Response{Text: "c"}, modeltest.Response{Text: "a again"})
	m1 := st.manager(t, nil)
	a, b, c := newSess(t, m1, ""), newSess(t, m1, ""), newSess(t, m1, "")
	for _, p := range []struct {
		s    *session.Session
		text string
	}{{a, "alpha task"}, {b, "beta task"}, {c, "gamma task"}, {a, "alpha again"}} {
		prompt(t, p.s, p.text)
		// File times order stored sessions; keep them apart by more
		// than the file system's clock tick.
		time.Sleep(20 * time.Millisecond)
	}
	m1.Close()
	m2 := st.manager(t, nil)
	fresh := newSess(t, m2, "")
	var got []string
	for _, ls := range m2.List() {
		got = append(got, ls.Title)
		if ls.ID == fresh.ID() && ls.Title != "(no prompt yet)" {
			t.Fatalf("fresh session title %q", ls.Title)
		}
	}
	want := "(no prompt yet),alpha task,gamma task,beta task"
	if strings.Join(got, ",") != want {
		t.Fatalf("list = %s, want %s", strings.Join(got, ","), want)
	}
}

// Retention removes sessions beyond the count (the new one included), but
// never a session another process has open; then the stored contents no
// remaining session names are collected, unless they are recent.
func TestPruneKeepsOpenSessions(t *testing.T) {
	var script []modeltest.Response
	for i := 0; i < 5; i++ {
		script = append(script, modeltest.Response{Text: "ok"})
	}
	st := newStored(t, script...)
	st.ws.Settings.SetEditorLayer(map[string]any{"general": map[string]any{"sessionRetention": map[string]any{"maxCount": 2.0}}})
	m1 := st.manager(t, nil)
	var files []string
	for i := 0; i < 3; i++ {
		s := newSess(t, m1, "")
		prompt(t, s, "task")
		files = append(files, s.SessionFile())
		time.Sleep(20 * time.Millisecond)
	}
	// A second process prunes while the first still has its sessions open.
	m2 := st.manager(t, nil)
	kept := newSess(t, m2, "")
	prompt(t, kept, "task")
	keptFile := kept.SessionFile()
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("a session open in another process was pruned: %v", err)
		}
	}
	m1.Close()
	m2.Close()

	// Three stored contents: one the kept session names, one nobody
	// names, and one nobody names that was stored a moment ago.
	objects := filepath.Join(filepath.Dir(filepath.Dir(keptFile)), "checkpoints", "objects")
	named, orphan, fresh := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	old := time.Now().Add(-2 * time.Hour)
	for _, h := range []string{named, orphan, fresh} {
		p := filepath.Join(objects, h[:2], h[2:])
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte(h), 0o600)
		if h != fresh {
			os.Chtimes(p, old, old)
		}
	}
	f, _ := os.OpenFile(keptFile, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"type":"checkpoint","time":"2026-01-01T00:00:00Z","turn":1,"callId":"c","files":[{"path":"/x","before":"` + named + `"}]}` + "\n")
	f.Close()

	m3 := st.manager(t, nil)
	prompt(t, newSess(t, m3, ""), "task")
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			t.Fatalf("%s was kept beyond general.sessionRetention.maxCount", f)
		}
	}
	if _, err := os.Stat(keptFile); err != nil {
		t.Fatalf("the most recent session was pruned: %v", err)
	}
	for h, want := range map[string]bool{named: true, orphan: false, fresh: true} {
		_, err := os.Stat(filepath.Join(objects, h[:2], h[2:]))
		if (err == nil) != want {
			t.Fatalf("content %s…: present %v, want %v", h[:4], err == nil, want)
		}
	}
}

// The approval mode, the todo list and the turn count come back with the
// session.
func TestLoadRestoresModeAndPlan(t *testing.T) {
	st := newStored(t,
		modeltest.Response{ToolCalls: []modeltest.ToolCall{{ID: "td", Name: "todo_write", Arguments: `{"todos":[{"id":"1","content":"Write it","status":"in_progress"}]}`}}},
		modeltest.Response{Text: "Planned."})
	env := st.env
	m1 := st.manager(t, []tools.Tool{tools.NewTodoWrite(env)})
	s := newSess(t, m1, "yolo")
	prompt(t, s, "plan it")
	if err := s.SetMode("plan"); err != nil {
		t.Fatal(err)
	}
	m1.Close()
	st.host.mu.Lock()
	st.host.updates = nil
	st.host.mu.Unlock()
	m2 := st.manager(t, []tools.Tool{tools.NewTodoWrite(env)})
	lr, err := m2.Load(s.ID())
	if err != nil || !lr.FromDisk {
		t.Fatalf("load: %+v %v", lr, err)
	}
	if lr.Session.Mode() != "plan" {
		t.Fatalf("mode %q after load", lr.Session.Mode())
	}
	lr.Session.Replay()
	var plan []session.PlanEntry
	for _, u := range st.host.all() {
		if u.Kind == session.UpdatePlan {
			plan = u.Entries
		}
	}
	if len(plan) != 1 || plan[0].Content != "Write it" {
		b, _ := json.Marshal(st.host.all())
		t.Fatalf("replayed plan %+v; updates %s", plan, b)
	}
}

// A session open in one process cannot be loaded by another: its history
// would fork inside one file. Once the first lets go, it loads.
func TestLoadRefusesASessionOpenElsewhere(t *testing.T) {
	st := newStored(t, modeltest.Response{Text: "ok"})
	m1 := st.manager(t, nil)
	s := newSess(t, m1, "")
	prompt(t, s, "task")
	m2 := st.manager(t, nil)
	if _, err := m2.Load(s.ID()); !errors.Is(err, session.ErrSessionInUse) {
		t.Fatalf("load of a session open elsewhere: %v", err)
	}
	m1.Close()
	if _, err := m2.Load(s.ID()); err != nil {
		t.Fatalf("load after the other process let go: %v", err)
	}
}

// Loads of one stored session that overlap in one process all get the
// session: the file is locked by this process, not by another one.
func TestConcurrentLoadsInOneProcessShareTheSession(t *testing.T) {
	st := newStored(t, modeltest.Response{Text: "Hello."})
	m1 := st.manager(t, nil)
	s := newSess(t, m1, "default")
	prompt(t, s, "hi")
	m1.Close()
	for round := 0; round < 20; round++ {
		m2 := st.manager(t, nil)
		const n = 8
		got := make([]*session.Session, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lr, err := m2.Load(s.ID())
				got[i], errs[i] = lr.Session, err
			}()
		}
		wg.Wait()
		for i := 0; i < n; i++ {
			if errs[i] != nil {
				t.Fatalf("round %d, load %d: %v", round, i, errs[i])
			}
			if got[i] != got[0] {
				t.Fatalf("round %d: loads got different sessions", round)
			}
		}
		m2.Close()
	}
}
