package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// Approval modes (tools.md §6.4).
const (
	ModeDefault  = "default"
	ModePlan     = "plan"
	ModeAutoEdit = "auto-edit"
	ModeYolo     = "yolo"
)

// Modes lists the approval modes in their advertised order.
var Modes = []string{ModeDefault, ModePlan, ModeAutoEdit, ModeYolo}

// Stop reasons (protocol.md §4).
const (
	StopEndTurn         = "end_turn"
	StopCancelled       = "cancelled"
	StopMaxTurnRequests = "max_turn_requests"
	StopMaxTokens       = "max_tokens"
	StopRefusal         = "refusal"
)

// Errors the rpc layer maps to JSON-RPC codes (protocol.md §8).
var (
	// ErrUnknownSession: -32602.
	ErrUnknownSession = errors.New("unknown session id")
	// ErrBadMode: -32602.
	ErrBadMode = errors.New("unknown approval mode")
	// ErrBusy: -32803 with reason session_busy.
	ErrBusy = errors.New("the session is already running a prompt; cancel it or wait for it to end")
	// ErrMaxSessionTurns: -32803 with reason max_session_turns.
	ErrMaxSessionTurns = errors.New("the session has reached model.maxSessionTurns; start a new session")
)

// NoModelError says no usable model is configured (-32000). Its message
// names what to set.
type NoModelError struct {
	// MissingName: an endpoint is set but no model name.
	MissingName bool
	// MissingKey: a remote endpoint is set without a key.
	MissingKey bool
	// Name is the configured model name, when one is set without any
	// endpoint or key.
	Name    string
	BaseURL string
	// EnvKey is the variable a modelProviders entry takes its key from,
	// when MissingKey is about one.
	EnvKey string
}

func (e *NoModelError) Error() string {
	switch {
	case e.MissingName:
		return "No model name is configured for " + endpointLabel(e.BaseURL) + ": set model.name (in the editor's qwen settings, .qwen/settings.json or ~/.qwen/settings.json) or OPENAI_MODEL in the environment qwen-ls starts with."
	case e.MissingKey && e.EnvKey != "":
		return "No API key is configured for " + endpointLabel(e.BaseURL) + ": the model's modelProviders entry takes it from " + e.EnvKey + ", which is set neither in the environment qwen-ls starts with, nor in ~/.qwen/.env, ~/.env or (in a trusted folder) the project's .qwen/.env or .env, nor in the settings' env."
	case e.MissingKey:
		return "No API key is configured for " + endpointLabel(e.BaseURL) + ": set OPENAI_API_KEY (or DASHSCOPE_API_KEY) in the environment qwen-ls starts with, or model.apiKey in ~/.qwen/settings.json. Only a local endpoint (localhost, 127.0.0.1, ::1) works without one."
	case e.Name != "":
		return "The model name is " + e.Name + ", but there is no endpoint or API key to reach it: set OPENAI_API_KEY (or DASHSCOPE_API_KEY) in the environment qwen-ls starts with for DashScope or OpenAI, " +
			"or set model.baseUrl (or OPENAI_BASE_URL) to a local OpenAI-compatible server such as Ollama, vLLM or llama.cpp."
	}
	return "No model is configured: set OPENAI_API_KEY (or DASHSCOPE_API_KEY), OPENAI_BASE_URL and OPENAI_MODEL in the environment qwen-ls starts with, " +
		"or model.name, model.baseUrl and model.apiKey in ~/.qwen/settings.json, .qwen/settings.json or the editor's qwen settings. " +
		"A local OpenAI-compatible server (Ollama, vLLM, llama.cpp) needs only OPENAI_BASE_URL and OPENAI_MODEL."
}

// Setup describes a model setup problem for the editor: a reason code and
// the settings (settings.json spelling) and environment variables that fix
// it (docs/protocol.md "Model and setup failures").
type Setup struct {
	Reason   string   `json:"reason"`
	Settings []string `json:"settings"`
	Env      []string `json:"env"`
	BaseURL  string   `json:"baseUrl,omitempty"`
	Model    string   `json:"model,omitempty"`
}

// Setup implements SetupError.
func (e *NoModelError) Setup() Setup {
	switch {
	case e.MissingName:
		return Setup{Reason: "no_model_name", Settings: []string{"model.name"}, Env: []string{"OPENAI_MODEL"}, BaseURL: ShownEndpoint(e.BaseURL)}
	case e.MissingKey && e.EnvKey != "":
		return Setup{Reason: "no_api_key", Settings: []string{"env." + e.EnvKey}, Env: []string{e.EnvKey}, BaseURL: ShownEndpoint(e.BaseURL)}
	case e.MissingKey:
		return Setup{Reason: "no_api_key", Settings: []string{"model.apiKey"}, Env: []string{"OPENAI_API_KEY", "DASHSCOPE_API_KEY"}, BaseURL: ShownEndpoint(e.BaseURL)}
	case e.Name != "":
		return Setup{Reason: "no_endpoint", Settings: []string{"model.baseUrl", "model.apiKey"}, Env: []string{"OPENAI_API_KEY", "OPENAI_BASE_URL"}, Model: e.Name}
	}
	return Setup{Reason: "no_model", Settings: []string{"model.name", "model.baseUrl"}, Env: []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"}}
}

// SetupError is an error that a change of the model settings fixes.
type SetupError interface {
	error
	Setup() Setup
}

// Options configures a Manager.
type Options struct {
	// Env is the tools' shared environment (workspace and settings).
	Env *tools.Env
	// Tools gives the registered tools.
	Tools Toolbox
	// Host is the editor; nil means none.
	Host Host
	// NewModel builds the model from the current settings; it returns a
	// NoModelError when none is configured.
	NewModel func() (Model, error)
	// NewModelFor builds the model a session chose by id (qwen/setModel),
	// or returns a *workspace.UnknownModelError when the settings no
	// longer offer it; nil: sessions cannot choose, and always use
	// NewModel.
	NewModelFor func(id string) (Model, error)
	// KnownModel returns an error naming the configured models when no
	// model choice has the id; nil accepts none but "".
	KnownModel func(id string) error
	// DefaultMode is the approval mode for sessions that name none.
	DefaultMode func() string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Ready, when set, is waited for before a session's first model
	// request: tool discovery must have had its first try.
	Ready func(ctx context.Context) error
	// Store keeps sessions on disk; nil keeps them in memory only.
	Store *Store
	// Log reports problems that fail no request (a session file that
	// cannot be written); nil drops them.
	Log func(format string, args ...any)
}

// Manager owns the sessions of one connection.
type Manager struct {
	opts Options

	mu       sync.Mutex
	sessions map[string]*Session
	focus    *Focus
	// pruneMu makes prunes one at a time, so that two sessions created
	// at once do not both remove the one session too many. It guards
	// removedSince: per session folder, the sessions removed since this
	// process last collected its contents (absent: never collected).
	pruneMu      sync.Mutex
	removedSince map[string]int
	// loadMu makes loads from disk one at a time: a second load of a
	// session would find its file locked by the first and take it for
	// another process's.
	loadMu sync.Mutex
}

// Focus is the editor's active file and selection (qwen/didFocus).
type Focus struct {
	Path string
	// StartLine and EndLine are 1-based; 0 means no selection.
	StartLine, EndLine int
	Selected           string
}

// NewManager returns a manager with no sessions.
func NewManager(opts Options) *Manager {
	if opts.Host == nil {
		opts.Host = nopHost{}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Manager{opts: opts, sessions: map[string]*Session{}, removedSince: map[string]int{}}
}

// SessionInfo describes a session.
type SessionInfo struct {
	ID    string
	Cwd   string
	Mode  string
	Model string // "" when no model is configured
	Tools []string
}

// NewSession creates a session. mode "" takes the default; an unknown mode
// is ErrBadMode.
func (m *Manager) NewSession(cwd, mode string) (SessionInfo, error) {
	if mode == "" && m.opts.DefaultMode != nil {
		mode = m.opts.DefaultMode()
	}
	if mode == "" {
		mode = ModeDefault
	}
	if !slices.Contains(Modes, mode) {
		return SessionInfo{}, fmt.Errorf("%w %q: use one of %v", ErrBadMode, mode, Modes)
	}
	if cwd == "" {
		cwd = m.opts.Env.Workspace.Roots.Primary()
	}
	s := &Session{id: newID(), cwd: cwd, mode: mode, mgr: m, ledger: tools.NewLedger(), created: m.opts.Now()}
	s.system = m.buildSystemPrompt(cwd)
	m.mu.Lock()
	m.sessions[s.id] = s
	m.mu.Unlock()
	return m.info(s), nil
}

// CheckModel returns the *NoModelError a prompt would get now, or nil when
// a model is configured.
func (m *Manager) CheckModel() error {
	_, err := m.opts.NewModel()
	return err
}

// ModelName is the name of the model a prompt would use now, or "" when
// none is configured.
func (m *Manager) ModelName() string {
	if m.opts.NewModel == nil {
		return ""
	}
	if model, err := m.opts.NewModel(); err == nil {
		return model.Name()
	}
	return ""
}

// ModelSetup is the setup problem that keeps a prompt from having a
// model, with its message for a person, as a prompt would fail with it;
// ok is false when a model is configured.
func (m *Manager) ModelSetup() (setup Setup, message string, ok bool) {
	if m.opts.NewModel == nil {
		nm := &NoModelError{}
		return nm.Setup(), nm.Error(), true
	}
	_, err := m.opts.NewModel()
	var nm *NoModelError
	if errors.As(err, &nm) {
		return nm.Setup(), nm.Error(), true
	}
	return Setup{}, "", false
}

func (m *Manager) info(s *Session) SessionInfo {
	info := SessionInfo{ID: s.id, Cwd: s.cwd, Mode: s.Mode()}
	if model, err := s.newModel(); err == nil {
		info.Model = model.Name()
	}
	if m.opts.Tools != nil {
		info.Tools = m.opts.Tools.Tools().Names()
	}
	return info
}

// Session returns a session by id.
func (m *Manager) Session(id string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownSession, id)
	}
	return s, nil
}

// SetFocus records the editor's active file and selection; every session
// of the connection gives it to the model with the next prompt.
func (m *Manager) SetFocus(f *Focus) {
	m.mu.Lock()
	m.focus = f
	m.mu.Unlock()
}

func (m *Manager) currentFocus() *Focus {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.focus
}

// Cancel cancels the running prompt of a session, if any.
func (m *Manager) Cancel(id string) error {
	s, err := m.Session(id)
	if err != nil {
		return err
	}
	s.Cancel()
	return nil
}

// CancelAll cancels every running prompt (shutdown).
func (m *Manager) CancelAll() {
	for _, s := range m.all() {
		s.Cancel()
	}
}

// all returns the sessions open now, so callers can act on each without
// holding the manager's lock.
func (m *Manager) all() []*Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	ss := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		ss = append(ss, s)
	}
	return ss
}

func newID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("s%d-%d", os.Getpid(), time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}

// Session is one conversation.
type Session struct {
	id      string
	cwd     string
	mgr     *Manager
	ledger  *tools.Ledger
	created time.Time

	// mu guards the fields below.
	mu   sync.Mutex
	mode string
	// model is the id of the model chosen for the session, "" for the
	// default.
	model   string
	history []Message
	busy    bool
	cancel  context.CancelFunc
	turns   int
	// failSig and failCount track repeated identical failures (§5.5).
	failSig   string
	failCount int
	// updated is when the session last changed (a message was added).
	updated time.Time
	// extraUsage collects tokens spent on the running turn's behalf by
	// subagents, added to the turn's usage when it ends.
	extraUsage Usage
	// allowed are the rules the user allowed for the session.
	allowed map[string]bool
	// system is the system prompt, built once when the session starts
	// (memory files are not reloaded during a session).
	system string
	// hostOverride and toolFilter are set for subagent sub-sessions.
	hostOverride Host
	toolFilter   func(name string) bool

	// persisted state (persist.go): the open session file, or nil before
	// the first prompt and for sessions kept in memory only.
	log *sessionLog
	// tokens[i] counts history[i]; calib is the model's last count.
	tokens []int
	calib  calibration
	// transcript is every message ever added, compressed or not, for
	// replay. Until the first compression it would equal history, so it
	// is not kept: ownTranscript says it has been split off (see
	// allMessages). title is the first prompt's first line.
	transcript    []Message
	ownTranscript bool
	title         string
	// plan is the last todo list shown.
	plan []PlanEntry
	// checkpoints are what each change-making call may have touched;
	// reverted holds the turns undone; notes go to the model with the
	// next prompt.
	checkpoints []checkpointRecord
	reverted    map[int]bool
	notes       []string
	// snaps are the shell snapshots' content store and stat cache.
	snaps *snapshotter
	// shown are the finished tool calls as the editor was shown them, by
	// call id, for replays (replay.go).
	shown map[string]*shownCall
	// stats are counted for /stats (commands.go).
	stats sessionStats
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Mode returns the approval mode.
func (s *Session) Mode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// SetMode changes the approval mode and tells the editor.
func (s *Session) SetMode(mode string) error {
	if !slices.Contains(Modes, mode) {
		return fmt.Errorf("%w %q: use one of %v", ErrBadMode, mode, Modes)
	}
	s.mu.Lock()
	s.mode = mode
	s.mu.Unlock()
	s.record(event{Type: "mode", Mode: mode})
	s.host().Update(s.id, Update{Kind: UpdateMode, CurrentModeID: mode})
	return nil
}

// ErrUnknownModel is a model id that no configured model has.
var ErrUnknownModel = errors.New("unknown model")

// CanChooseModel reports whether sessions can choose their model (the
// models come from the settings).
func (m *Manager) CanChooseModel() bool {
	return m.opts.NewModelFor != nil && m.opts.KnownModel != nil
}

// CheckModelID returns ErrUnknownModel, naming the configured models,
// when no model choice has the id.
func (m *Manager) CheckModelID(id string) error {
	if !m.CanChooseModel() {
		return fmt.Errorf("%w %q: this server offers no model choice", ErrUnknownModel, id)
	}
	if err := m.opts.KnownModel(id); err != nil {
		return unknownModel{err}
	}
	return nil
}

// unknownModel is ErrUnknownModel with the settings' own message, which
// names the id and the configured ones.
type unknownModel struct{ err error }

func (e unknownModel) Error() string        { return e.err.Error() }
func (e unknownModel) Is(target error) bool { return target == ErrUnknownModel }
func (e unknownModel) Unwrap() error        { return e.err }

// ModelID is the id of the model chosen for the session, "" for the
// default.
func (s *Session) ModelID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.model
}

// SetModel chooses the session's model by id ("" goes back to the
// default); the next model request uses it. It is kept with the session
// and the client is told (current_model_update). An id no configured
// model has is ErrUnknownModel, naming the known ones.
func (s *Session) SetModel(id string) error {
	if id != "" {
		if err := s.mgr.CheckModelID(id); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.model = id
	s.mu.Unlock()
	s.record(event{Type: "model", Model: id})
	current := id
	if current == "" {
		current = s.mgr.ModelName()
	}
	s.host().Update(s.id, Update{Kind: UpdateModel, ModelID: current})
	return nil
}

// newModel builds the session's model: the one chosen for it, else the
// default. A chosen model the settings no longer offer falls back to the
// default.
func (s *Session) newModel() (Model, error) {
	id := s.ModelID()
	if id == "" || s.mgr.opts.NewModelFor == nil {
		return s.mgr.opts.NewModel()
	}
	m, err := s.mgr.opts.NewModelFor(id)
	var unknown *workspace.UnknownModelError
	if errors.As(err, &unknown) {
		return s.mgr.opts.NewModel()
	}
	return m, err
}

// Cancel stops the running prompt, if any.
func (s *Session) Cancel() {
	s.mu.Lock()
	c := s.cancel
	s.mu.Unlock()
	if c != nil {
		c()
	}
}

// History returns a copy of the conversation so far.
func (s *Session) History() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.history)
}

// host is where the session's updates and questions go: the editor, or
// for a subagent, the parent call's view of it.
func (s *Session) host() Host {
	if s.hostOverride != nil {
		return s.hostOverride
	}
	return s.mgr.opts.Host
}

// toolset is the tool set for the next model request: the registry's, or
// a subagent's restricted selection of it.
func (s *Session) toolset() ToolSet {
	ts := s.mgr.opts.Tools.Tools()
	if s.toolFilter != nil {
		return filteredSet{ts, s.toolFilter}
	}
	return ts
}

// filteredSet hides tools that keep does not accept.
type filteredSet struct {
	ToolSet
	keep func(name string) bool
}

func (f filteredSet) Lookup(name string) (tools.Tool, *tools.ToolError) {
	t, err := f.ToolSet.Lookup(name)
	if err != nil {
		return nil, err
	}
	if !f.keep(t.Name()) {
		return nil, tools.NewError(tools.ErrorToolNotRegistered, fmt.Sprintf("There is no tool named %q available here; call tools by their exact registered names.", name))
	}
	return t, nil
}

func (f filteredSet) Declarations() []ToolDecl {
	var out []ToolDecl
	for _, d := range f.ToolSet.Declarations() {
		if f.keep(d.Name) {
			out = append(out, d)
		}
	}
	return out
}

func (f filteredSet) Names() []string {
	var out []string
	for _, n := range f.ToolSet.Names() {
		if f.keep(n) {
			out = append(out, n)
		}
	}
	return out
}

// addUsage records tokens a subagent spent for the running turn.
func (s *Session) addUsage(u Usage) {
	s.mu.Lock()
	s.extraUsage = s.extraUsage.Add(u)
	s.mu.Unlock()
}

// takeUsage returns and clears the subagents' tokens.
func (s *Session) takeUsage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.extraUsage
	s.extraUsage = Usage{}
	return u
}
