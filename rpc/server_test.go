package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/qwen-ls/qwen-ls/rpc"
	"github.com/qwen-ls/qwen-ls/rpc/rpctest"
)

// testMethods are extra methods the tests install: a request that blocks
// until cancelled, and one that returns a buffer's text as the server sees
// it.
func testMethods() map[string]rpc.Method {
	return map[string]rpc.Method{
		"test/block": {Async: true, Handle: func(ctx context.Context, req *rpc.Request) (any, error) {
			<-ctx.Done()
			return "finished", nil
		}},
		"test/text": {Handle: func(ctx context.Context, req *rpc.Request) (any, error) {
			var p struct{ Path string }
			if err := json.Unmarshal(req.Params, &p); err != nil {
				return nil, rpc.Error(rpc.CodeInvalidParams, "%v", err)
			}
			b, ok := req.Server.Workspace().Overlay.Get(p.Path)
			if !ok {
				return nil, nil
			}
			return map[string]any{"text": b.Text, "version": b.Version}, nil
		}},
		"test/panic": {Handle: func(ctx context.Context, req *rpc.Request) (any, error) {
			panic("boom")
		}},
	}
}

func start(t *testing.T) *rpctest.Editor {
	t.Helper()
	return rpctest.Start(t, rpc.WithMethods(rpc.Options{Version: "test", Stderr: testLog{t}}, testMethods()))
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestInitializeAdvertisesProtocolCapabilities(t *testing.T) {
	for _, tc := range []struct {
		name string
		utf8 bool
		want string
	}{
		{"utf-8 offered", true, "utf-8"},
		{"utf-16 only", false, "utf-16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := rpctest.Start(t, rpc.Options{Version: "9.9.9", ToolNames: func() []string { return []string{"read_file", "edit"} }, Stderr: testLog{t}})
			root := t.TempDir()
			raw := e.Initialize(rpctest.InitParams{Roots: []string{root}, UTF8: tc.utf8, Rich: true})
			var got struct {
				Capabilities map[string]any `json:"capabilities"`
				ServerInfo   map[string]any `json:"serverInfo"`
			}
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			c := got.Capabilities
			// experimental.qwen.sandbox depends on the machine; its own
			// test is TestInitializeReportsSandbox.
			// experimental.qwen.setup (no model is configured here) has
			// its own, TestInitializeSaysWhatIsMissing.
			if q, ok := c["experimental"].(map[string]any)["qwen"].(map[string]any); ok {
				delete(q, "sandbox")
				if setup, _ := q["setup"].(map[string]any); setup["reason"] != "no_model" {
					t.Errorf("experimental.qwen.setup = %v, want reason no_model", q["setup"])
				}
				delete(q, "setup")
			}
			want := map[string]any{
				"positionEncoding": tc.want,
				"textDocumentSync": map[string]any{"openClose": true, "change": float64(2), "save": map[string]any{"includeText": false}},
				"workspace": map[string]any{"workspaceFolders": map[string]any{
					"supported": true, "changeNotifications": true,
				}},
				"executeCommandProvider": map[string]any{"commands": []any{"qwen-ls.prompt", "qwen-ls.cancel", "qwen-ls.checkSetup", "qwen-ls.ask"}},
				"experimental": map[string]any{"qwen": map[string]any{
					"protocolVersion": float64(1),
					"model":           nil,
					"approvalModes":   []any{"default", "plan", "auto-edit", "yolo"},
					"tools":           []any{"read_file", "edit"},
				}},
			}
			if !reflect.DeepEqual(c, want) {
				t.Errorf("capabilities:\n got %#v\nwant %#v", c, want)
			}
			if !reflect.DeepEqual(got.ServerInfo, map[string]any{"name": "qwen-ls", "version": "9.9.9"}) {
				t.Errorf("serverInfo = %v", got.ServerInfo)
			}
			if roots := e.Server.Workspace().Roots.List(); len(roots) != 1 {
				t.Errorf("roots = %v, want the one folder", roots)
			}
			// Neovim 0.7 sends shutdown twice; both are answered.
			for i := 0; i < 2; i++ {
				res, err := e.Call("shutdown", nil)
				if err != nil || string(res) != "null" {
					t.Fatalf("shutdown #%d = %s, %v; want null", i+1, res, err)
				}
			}
			if _, err := e.Call("test/text", map[string]any{"path": "/x"}); !isCode(err, rpc.CodeInvalidRequest) {
				t.Errorf("request after shutdown: %v, want -32600", err)
			}
			e.Notify("exit", nil)
			if code := e.ExitCode(); code != 0 {
				t.Errorf("exit code after shutdown = %d, want 0", code)
			}
		})
	}
}

func TestExitWithoutShutdownExitsOne(t *testing.T) {
	e := start(t)
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}})
	e.Notify("exit", nil)
	if code := e.ExitCode(); code != 1 {
		t.Errorf("exit code = %d, want 1", code)
	}
}

func TestRequestsBeforeInitializeAreRefused(t *testing.T) {
	e := start(t)
	if _, err := e.Call("shutdown", nil); !isCode(err, rpc.CodeServerNotInitialized) {
		t.Fatalf("shutdown before initialize: %v, want -32002", err)
	}
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}})
	if _, err := e.Call("initialize", rpctest.InitParams{}.Params()); !isCode(err, rpc.CodeInvalidRequest) {
		t.Errorf("second initialize: %v, want -32600", err)
	}
}

func TestCancelRequestWithNumericAndStringIDs(t *testing.T) {
	e := start(t)
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}})
	for _, id := range []string{`41`, `"req-7"`} {
		ch := e.SendWithID(json.RawMessage(id), "test/block", map[string]any{})
		e.Notify("$/cancelRequest", map[string]any{"id": json.RawMessage(id)})
		_, err := e.Wait(json.RawMessage(id), ch)
		if !isCode(err, rpc.CodeRequestCancelled) {
			t.Errorf("id %s: %v, want -32800", id, err)
		}
	}
}

func TestHandlerPanicIsAnsweredAndServerGoesOn(t *testing.T) {
	e := start(t)
	e.Initialize(rpctest.InitParams{Roots: []string{t.TempDir()}})
	if _, err := e.Call("test/panic", nil); !isCode(err, rpc.CodeInternalError) {
		t.Fatalf("panic: %v, want -32603", err)
	}
	if _, err := e.Call("test/text", map[string]any{"path": "/nothing"}); err != nil {
		t.Fatalf("request after a panic: %v", err)
	}
}

func isCode(err error, code int64) bool {
	var re *rpctest.RPCError
	return errors.As(err, &re) && re.Code == code
}

// A request that calls back into the editor runs off the read path: while
// it waits for the editor's answer, didChange notifications keep being
// applied, and the answer itself can arrive.
func TestCallbackIntoEditorDoesNotBlockTheReadPath(t *testing.T) {
	release := make(chan struct{})
	methods := testMethods()
	methods["test/ask"] = rpc.Method{Async: true, Handle: func(ctx context.Context, req *rpc.Request) (any, error) {
		var answer map[string]any
		if err := req.Server.Call(ctx, "window/showMessageRequest", map[string]any{"type": 3, "message": "ok?", "actions": []any{map[string]any{"title": "Yes"}}}, &answer); err != nil {
			return nil, err
		}
		return answer, nil
	}}
	e := rpctest.Start(t, rpc.WithMethods(rpc.Options{Version: "test", Stderr: testLog{t}}, methods))
	e.Handle("window/showMessageRequest", func(params json.RawMessage) (any, error) {
		<-release // the user takes their time
		return map[string]any{"title": "Yes"}, nil
	})
	root := t.TempDir()
	e.Initialize(rpctest.InitParams{Roots: []string{root}})
	id, ch := e.Send("test/ask", map[string]any{})
	path := root + "/a.txt"
	e.Open(path, "x")
	v := e.Change(path, rpctest.Edit{StartLine: 0, StartChar: 1, EndLine: 0, EndChar: 1, Text: "y"})
	// The server handles this request while test/ask still waits.
	assertText(t, e, path, "xy", v)
	close(release)
	res, err := e.Wait(id, ch)
	if err != nil || !strings.Contains(string(res), "Yes") {
		t.Fatalf("test/ask = %s, %v", res, err)
	}
}

// Indexing starts after initialized, never before the initialize answer,
// and the index then knows the root's files.
func TestIndexStartsAfterInitialized(t *testing.T) {
	e := start(t)
	root := t.TempDir()
	if err := os.WriteFile(root+"/main.go", []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := e.Server.Workspace().Index
	if _, err := e.Call("initialize", rpctest.InitParams{Roots: []string{root}}.Params()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-idx.Ready():
		t.Fatal("the index was built before initialized")
	default:
	}
	e.Notify("initialized", map[string]any{})
	select {
	case <-idx.Ready():
	case <-time.After(rpctest.DefaultTimeout):
		t.Fatal("the index never became ready")
	}
	files := idx.Files()
	if len(files) != 1 || !strings.HasSuffix(files[0].Path, "/main.go") {
		t.Fatalf("index = %+v", files)
	}
}
