package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/qwen-ls/qwen-ls/registry"
	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/sandbox"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// Options configures a Server. The zero value serves with no tools and logs
// to os.Stderr.
type Options struct {
	// Version is reported in serverInfo.
	Version string
	// Stderr receives the log; nil means os.Stderr.
	Stderr io.Writer
	// Workspace is the workspace to serve; nil means a new empty one that
	// the server owns and closes.
	Workspace *workspace.Workspace
	// ToolNames lists the registered tools for experimental.qwen.tools.
	ToolNames func() []string
	// extraMethods adds request and notification handlers, for tests
	// (export_test.go's WithMethods sets it).
	extraMethods map[string]method
	// ACP selects newline-delimited framing (--acp) instead of LSP headers.
	ACP bool
	// QwenHome is qwen-ls's state folder; "" means $QWEN_HOME or ~/.qwen.
	QwenHome string
	// NewModel overrides the model factory (default: from the settings).
	NewModel func() (session.Model, error)
	// StderrLevel is the least severe level written to Stderr; zero
	// writes every line. window/logMessage gets info and above either way.
	StderrLevel Level
	// Retry is the model's retry policy (zero: the defaults).
	Retry RetryPolicy
	// ExtraTools are registered after the built-ins, with them: for
	// embedding qwen-ls and for tests.
	ExtraTools []tools.Tool
	// LanguageServerIdle stops a language server qwen-ls started after
	// that long without a question; 0 means 5 minutes.
	LanguageServerIdle time.Duration
}

// RetryPolicy is the model's retry policy.
type RetryPolicy = session.RetryPolicy

// method handles one JSON-RPC method.
type method struct {
	// Async runs a request off the read path with a context that
	// $/cancelRequest cancels. Requests that wait on the editor or on
	// slow work must be async, or the connection deadlocks.
	Async bool
	// Handle returns the result (marshalled with encoding/json, so LSP
	// types must be passed as json.RawMessage made by protocol.Marshal)
	// or an error; a *jsonrpc2.Error keeps its code, others become -32603.
	Handle func(ctx context.Context, req *request) (any, error)
}

// request is what a method sees of one message.
type request struct {
	Method string
	Params json.RawMessage
	// ID is nil for notifications.
	ID *jsonrpc2.ID
	// Server is the server handling the request, for calls back into the
	// editor.
	Server *Server
	// afterReply runs once the answer is written.
	afterReply func()
	// long are where the long strings of Params lie (jsonValue).
	long [][2]int
	// typed is a prompt as the person typed it, when the server sends
	// the model another text (a custom command, /init).
	typed string
}

// params is Params with where its long strings lie.
func (r *request) params() jsonValue { return jsonValue{raw: r.Params, long: r.long} }

// AfterReply runs f once the request's answer is written, so that what f
// sends reaches the editor after the answer.
func (r *request) AfterReply(f func()) { r.afterReply = f }

type lifecycle int

const (
	stateNew lifecycle = iota
	stateInitialized
	stateShutdown
)

// Server serves one editor connection.
type Server struct {
	opts Options
	log  *logger
	// uris converts URIs and paths in the client's spelling (uri.go).
	uris uriBook
	// secrets are the configured secrets, left out of logs, replies and
	// session files.
	secrets  secretSet
	ws       *workspace.Workspace
	ownsWS   bool
	methods  map[string]method
	env      *tools.Env
	registry *registry.Registry
	sessions *session.Manager
	host     *host
	// langs are the language servers qwen-ls starts (langservers.go).
	langs *langServers
	turns turnProgress
	// plain holds the transcripts of a plain client's sessions.
	plain   transcripts
	sources *registry.Sources
	// srcMu guards srcProgress, the $/progress of the running discovery
	// round.
	srcMu       sync.Mutex
	srcProgress *progress
	// startOnce starts indexing and tool sources once roots are known
	// (after initialized in LSP, at the first session in ACP).
	startOnce sync.Once
	// trustMu guards trustTold: the folder-trust notices already given
	// (root and ignored settings).
	trustMu   sync.Mutex
	trustTold map[string]bool
	// acpTrustNotice is a folder-trust notice waiting for the next ACP
	// prompt: ACP has no way to show a message outside a session.
	acpTrustNotice string
	// acpMu guards acpMCP, the MCP servers ACP clients named in
	// session/new (the settings' editor layer in ACP mode).
	acpMu  sync.Mutex
	acpMCP map[string]any
	// implicitMu serialises creating the implicit session of plain
	// clients.
	implicitMu sync.Mutex
	baseCtx    context.Context
	cancelAll  context.CancelFunc

	// conn is set once in Serve; connReady is closed after that, and the
	// read goroutine (which jsonrpc2 starts inside NewConn) waits on it.
	conn *jsonrpc2.Conn
	// stream is conn's stream, for notifications too large to encode
	// twice (host.Update).
	stream    *stream
	connReady chan struct{}

	// mu guards the lifecycle, the negotiated capabilities and the
	// in-flight requests.
	mu       sync.Mutex
	state    lifecycle
	caps     clientCaps
	inflight map[jsonrpc2.ID]context.CancelFunc
	// implicitSession is the session of qwen-ls.prompt without an id.
	implicitSession string
	exitCode        int
	exited          chan struct{}
	exitOnce        sync.Once

	// async counts request goroutines, so Serve can wait for them.
	async sync.WaitGroup

	// mem hands memory back to the system after big inputs (memory.go).
	mem releaser

	// cmds are the custom slash commands and their watcher (commands.go).
	cmds commandSet
}

// clientCaps is what the server learned from initialize.
type clientCaps struct {
	Encoding          workspace.Encoding
	ApplyEdit         bool
	DocumentChanges   bool
	WorkDoneProgress  bool
	ShowMessage       bool
	ShowDocument      bool
	Rich              bool
	SessionUpdates    bool
	RequestPermission bool
	ProposeEdit       bool
	DeferredReview    bool
	// ReadTextFile, WriteTextFile and Terminal are an ACP client's fs
	// and terminal capabilities (protocol.md §9).
	ReadTextFile  bool
	WriteTextFile bool
	Terminal      bool
	// Notices: the ACP client takes notice updates
	// (clientCapabilities.session.notices).
	Notices bool
	// LSP: the client answers qwen/lsp (experimental.qwen.lsp).
	LSP bool
	// InitOptions is the raw initializationOptions object, or nil.
	InitOptions json.RawMessage
}

// NewServer returns a server ready to Serve.
func NewServer(opts Options) *Server {
	stderr := opts.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	s := &Server{
		opts:      opts,
		log:       &logger{out: stderr, outLevel: opts.StderrLevel},
		ws:        opts.Workspace,
		inflight:  map[jsonrpc2.ID]context.CancelFunc{},
		exited:    make(chan struct{}),
		exitCode:  1,
		connReady: make(chan struct{}),
	}
	if s.ws == nil {
		s.ws = workspace.New(workspace.Options{})
		s.ownsWS = true
	}
	s.watchSecrets()
	s.log.scrub = s.secrets.scrub
	s.setupAgent()
	if opts.ACP {
		s.methods = s.acpMethods()
	} else {
		s.methods = s.builtinMethods()
		for name, m := range s.agentMethods() {
			s.methods[name] = m
		}
		for name, m := range s.plainMethods() {
			s.methods[name] = m
		}
	}
	s.commandMethods()
	for name, m := range opts.extraMethods {
		s.methods[name] = m
	}
	return s
}

// Workspace returns the workspace the server keeps current.
func (s *Server) Workspace() *workspace.Workspace { return s.ws }

// clientCaps returns the client capabilities negotiated at initialize.
func (s *Server) clientCaps() clientCaps {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

// Serve reads and answers messages until exit, or until in closes. It
// returns the exit code LSP prescribes: 0 after shutdown, else 1.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) int {
	var closer io.Closer
	if c, ok := in.(io.Closer); ok {
		closer = c
	}
	st := newStream(in, out, closer, s.opts.ACP)
	st.keepParams = true
	st.onLarge = s.mem.soon
	st.onBadMessage = func(code int64, reason string) {
		s.log.Warnf("answered a bad message with %d: %s", code, reason)
	}
	s.baseCtx, s.cancelAll = context.WithCancel(ctx)
	s.log.Infof("%s", sandbox.Probe())
	s.conn = jsonrpc2.NewConn(s.baseCtx, st, s, jsonrpc2.SetLogger(discardLogger{}))
	s.stream = st
	close(s.connReady)
	select {
	case <-s.exited:
	case <-s.conn.DisconnectNotify():
		s.log.Infof("the editor closed the connection")
		if s.opts.ACP {
			// ACP has no shutdown: closing stdin is the normal end.
			s.mu.Lock()
			s.exitCode = 0
			s.mu.Unlock()
		}
	case <-ctx.Done():
	}
	s.sessions.CancelAll()
	s.cancelAll()
	s.waitAsync(2 * time.Second)
	s.mem.stop()
	s.closeCommands()
	// Background commands and whatever foreground commands left behind
	// die with the connection (tools.md §3.8).
	if s.env.Processes != nil {
		s.env.Processes.KillAll()
	}
	// MCP servers and discovery processes are stopped with the connection,
	// and so are the language servers.
	s.sources.Close()
	s.langs.close()
	// Session files are released for the next server.
	s.sessions.Close()
	_ = s.conn.Close()
	if s.ownsWS {
		_ = s.ws.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exitCode
}

func (s *Server) waitAsync(limit time.Duration) {
	done := make(chan struct{})
	go func() { s.async.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		s.log.Warnf("some requests were still running at exit")
	}
}

// Handle implements jsonrpc2.Handler. It runs on the connection's read
// goroutine: notifications are applied here, in order; requests marked
// Async are started on their own goroutine.
func (s *Server) Handle(ctx context.Context, conn *jsonrpc2.Conn, jr *jsonrpc2.Request) {
	<-s.connReady
	held, ok := s.stream.takeParams(jr)
	params := json.RawMessage(held.raw)
	if !ok && jr.Params != nil {
		params = json.RawMessage(*jr.Params)
	}
	req := &request{Method: jr.Method, Params: params, Server: s, long: held.long}
	if !jr.Notif {
		id := jr.ID
		req.ID = &id
	}
	if len(params) > largeMessage {
		// Once handled, the message is garbage. (An async handler may
		// still hold it; its end asks again.)
		defer s.mem.soon()
	}
	if jr.Notif {
		s.handleNotification(ctx, req)
		return
	}
	s.handleRequest(ctx, req)
}

func (s *Server) handleNotification(ctx context.Context, req *request) {
	if req.Method == "exit" {
		s.exit()
		return
	}
	if req.Method == "$/cancelRequest" {
		s.cancelRequest(req.Params)
		return
	}
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	if state == stateNew {
		s.log.Debugf("dropped %s: the server is not initialized", req.Method)
		return
	}
	m, ok := s.methods[req.Method]
	if !ok {
		s.log.Debugf("ignored the notification %s", req.Method)
		return
	}
	if m.Async {
		s.async.Add(1)
		go func() {
			defer s.async.Done()
			s.call(s.baseCtx, m, req)
		}()
		return
	}
	if _, err := s.call(ctx, m, req); err != nil {
		s.log.Errorf("%s: %v", req.Method, err)
	}
}

func (s *Server) handleRequest(ctx context.Context, req *request) {
	id := *req.ID
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	switch {
	case req.Method == "initialize" && state != stateNew:
		s.reply(id, nil, rpcError(codeInvalidRequest, "initialize was already received"))
		return
	case req.Method != "initialize" && state == stateNew:
		s.reply(id, nil, rpcError(codeServerNotInitialized, "the server is not initialized: send initialize first"))
		return
	case req.Method != "shutdown" && state == stateShutdown:
		s.reply(id, nil, rpcError(codeInvalidRequest, "the server is shutting down: only exit is accepted"))
		return
	}
	m, ok := s.methods[req.Method]
	if !ok {
		s.reply(id, nil, rpcError(codeMethodNotFound, "method not found: %s", req.Method))
		return
	}
	if !m.Async {
		res, err := s.call(ctx, m, req)
		s.reply(id, res, err)
		if req.afterReply != nil {
			req.afterReply()
		}
		return
	}
	rctx, cancel := context.WithCancel(s.baseCtx)
	s.mu.Lock()
	s.inflight[id] = cancel
	s.mu.Unlock()
	s.async.Add(1)
	go func() {
		defer s.async.Done()
		defer func() {
			s.mu.Lock()
			delete(s.inflight, id)
			s.mu.Unlock()
			cancel()
		}()
		// A request that allocated a lot (a turn that streamed a big
		// answer) leaves that much garbage: hand it back once it ends.
		before := allocated()
		defer func() {
			if len(req.Params) > largeMessage || allocated()-before > largeAllocation {
				s.mem.soon()
			}
		}()
		res, err := s.call(rctx, m, req)
		if rctx.Err() != nil && s.baseCtx.Err() == nil {
			err = rpcError(codeRequestCancelled, "request cancelled")
			res = nil
		}
		s.reply(id, res, err)
		if req.afterReply != nil {
			req.afterReply()
		}
	}()
}

// call runs a handler, turning a panic into -32603 so that one bad message
// never takes the server down.
func (s *Server) call(ctx context.Context, m method, req *request) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Errorf("panic in %s: %v\n%s", req.Method, r, debug.Stack())
			res, err = nil, rpcError(codeInternalError, "internal error in %s: %v", req.Method, r)
		}
	}()
	return m.Handle(ctx, req)
}

func (s *Server) reply(id jsonrpc2.ID, res any, err error) {
	ctx := context.Background()
	if err != nil {
		var je *jsonrpc2.Error
		if !errors.As(err, &je) {
			je = rpcError(codeInternalError, "%v", err)
		}
		// Editors show and log error messages; a provider that echoes
		// the API key back in its error must not put it there.
		if clean := s.secrets.scrub(je.Message); clean != je.Message {
			je = &jsonrpc2.Error{Code: je.Code, Message: clean, Data: je.Data}
		}
		if e := s.conn.ReplyWithError(ctx, id, je); e != nil {
			s.log.Debugf("reply to %s: %v", id, e)
		}
		return
	}
	if res == nil {
		res = json.RawMessage("null")
	}
	if e := s.conn.Reply(ctx, id, res); e != nil {
		s.log.Debugf("reply to %s: %v", id, e)
	}
}

// cancelRequest handles $/cancelRequest, whose id may be a number or a
// string.
func (s *Server) cancelRequest(params json.RawMessage) {
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.ID == nil {
		s.log.Warnf("$/cancelRequest without a usable id: %s", truncate(string(params), 80))
		return
	}
	id, ok := parseID(p.ID)
	if !ok {
		s.log.Warnf("$/cancelRequest with an id that is neither a number nor a string: %s", truncate(string(p.ID), 40))
		return
	}
	s.mu.Lock()
	cancel := s.inflight[id]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func parseID(raw json.RawMessage) (jsonrpc2.ID, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var str string
		if json.Unmarshal(raw, &str) != nil {
			return jsonrpc2.ID{}, false
		}
		return jsonrpc2.ID{Str: str, IsString: true}, true
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return jsonrpc2.ID{}, false
	}
	return jsonrpc2.ID{Num: n}, true
}

func (s *Server) exit() {
	s.exitOnce.Do(func() {
		s.mu.Lock()
		if s.state == stateShutdown {
			s.exitCode = 0
		}
		s.mu.Unlock()
		close(s.exited)
	})
}

// Notify sends a notification to the editor.
func (s *Server) Notify(ctx context.Context, method string, params any) error {
	return s.conn.Notify(ctx, method, params)
}

// Call sends a request to the editor and waits for its answer. It must not
// be called from a synchronous handler: the answer arrives on the read
// goroutine that such a handler is blocking.
func (s *Server) Call(ctx context.Context, method string, params, result any) error {
	return s.conn.Call(ctx, method, params, result)
}

// Logf logs through the server's logger (stderr, and window/logMessage at
// info and above once initialized).
func (s *Server) Logf(level Level, format string, args ...any) {
	s.log.logf(level, format, args...)
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...interface{}) {}

var _ = fmt.Sprintf
