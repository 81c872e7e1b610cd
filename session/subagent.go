package session

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/codeintel"
)

// subagentExcluded are the tools a sub-session never has: it cannot start
// subagents of its own, keep the todo list or leave plan mode
// (tools.md §3.13).
var subagentExcluded = []string{"task", "todo_write", "exit_plan_mode"}

// subagentMaxTurns applies when a request names no limit.
const subagentMaxTurns = 50

// errNestedSubagent guards against recursion should a sub-session ever be
// handed the task tool.
var errNestedSubagent = errors.New("a subagent cannot start another subagent")

// RunSubagent implements tools.Model: the subagent runs in a sub-session
// of the session whose call asked for it.
func (t toolModel) RunSubagent(ctx context.Context, req tools.SubagentRequest, onUpdate func(tools.SubagentRun)) (tools.SubagentResult, error) {
	if t.s == nil {
		return tools.SubagentResult{}, errors.New("there is no session to run the subagent in")
	}
	return t.s.runSubagent(ctx, t.m, req, onUpdate)
}

// runSubagent runs one subagent in a sub-session of p: its own history
// (the definition's system prompt with p's environment section, then the
// prompt as the first user message) and read ledger; p's workspace,
// editor, settings, approval mode and remembered approvals. Its calls go
// through the same scheduler as p's; what the editor would see of them
// arrives through a subagentHost, which turns it into the SubagentRun
// progress of p's task call. The run ends at a reply without tool calls,
// after req.MaxTurns requests, at a model failure, or when ctx ends.
func (p *Session) runSubagent(ctx context.Context, model Model, req tools.SubagentRequest, onUpdate func(tools.SubagentRun)) (tools.SubagentResult, error) {
	if _, nested := p.hostOverride.(*subagentHost); nested {
		return tools.SubagentResult{}, errNestedSubagent
	}
	if onUpdate == nil {
		onUpdate = func(tools.SubagentRun) {}
	}
	maxTurns := req.MaxTurns
	if maxTurns <= 0 {
		maxTurns = subagentMaxTurns
	}
	h := &subagentHost{parent: p, callID: req.CallID, name: req.Name, onUpdate: onUpdate,
		run:   tools.SubagentRun{SubagentName: req.Name, Description: req.Description, Status: tools.SubagentRunning},
		index: map[string]int{}, names: map[string]string{}}
	sub := &Session{
		id:           p.id + "/" + req.CallID,
		cwd:          p.cwd,
		mgr:          p.mgr,
		ledger:       tools.NewLedger(),
		created:      p.mgr.opts.Now(),
		mode:         p.Mode(),
		model:        p.ModelID(),
		system:       subagentSystemPrompt(req.SystemPrompt, p.systemPrompt()),
		hostOverride: h,
		toolFilter:   subagentFilter(p.toolset(), req.Tools),
	}
	sub.append(Message{Role: "user", Text: req.Prompt})
	modelName := req.Model
	if modelName == "" {
		modelName = model.Name()
	}

	var res tools.SubagentResult
	var guard loopGuard
	for {
		sub.syncFrom(p)
		toolset := sub.toolset()
		msgs := append([]Message{{Role: "system", Text: sub.system}}, sub.History()...)
		resp, err := model.Stream(ctx, ModelRequest{Model: modelName, Messages: msgs, Tools: toolset.Declarations()}, StreamEvents{})
		if ctx.Err() != nil {
			res.ToolCalls = h.calls()
			return res, ctx.Err()
		}
		if err != nil {
			res.ToolCalls = h.calls()
			return res, err
		}
		if resp != nil {
			// The subagent's tokens are the parent turn's too.
			p.addUsage(resp.Usage)
		}
		res.Turns++
		h.setTurns(res.Turns)
		calls, refused, looping := guard.screenCalls(sub.fixCallIDs(resp.ToolCalls))
		sub.append(Message{Role: "assistant", Text: resp.Text, Reasoning: resp.Reasoning, ToolCalls: calls})
		res.Text = resp.Text
		if resp.Refusal != "" && resp.Text == "" {
			res.Text = resp.Refusal
		}
		if len(calls) == 0 || resp.Refusal != "" || resp.FinishReason == "content_filter" {
			break
		}
		if res.Turns >= maxTurns {
			// The calls of the last allowed reply are not run: no model
			// would read their results.
			res.MaxTurnsReached = true
			break
		}
		h.expect(calls, toolset)
		out := sub.runBatch(ctx, toolset, calls, resp.FinishReason == "length", refused)
		for _, m := range out.messages {
			sub.append(m)
		}
		sub.syncTo(p)
		if ctx.Err() != nil {
			res.ToolCalls = h.calls()
			return res, ctx.Err()
		}
		if looping {
			res.Text = strings.TrimSpace(loopStopped)
			break
		}
		// A batch the user rejected entirely does not end the run as it
		// ends a turn: nobody would answer the subagent, so it reads the
		// rejections and adapts.
	}
	res.ToolCalls = h.calls()
	return res, nil
}

// subagentSystemPrompt is the definition's body followed by the
// environment section of the parent's system prompt.
func subagentSystemPrompt(body, parentSystem string) string {
	prompt := strings.TrimSpace(body)
	if env := environmentSection(parentSystem); env != "" {
		prompt += "\n\n" + env
	}
	return prompt
}

// environmentSection cuts the "# Environment" section, up to the next
// heading, out of a system prompt made by buildSystemPrompt.
func environmentSection(system string) string {
	const heading = "# Environment\n"
	i := strings.Index(system, heading)
	if i < 0 {
		return ""
	}
	env := system[i:]
	if j := strings.Index(env[len(heading):], "\n# "); j >= 0 {
		env = env[:len(heading)+j]
	}
	return strings.TrimRight(env, "\n")
}

// subagentFilter keeps the tools a sub-session may use: all but
// subagentExcluded, and when names is not nil only those named (by name
// or alias; aliases are resolved in ts).
func subagentFilter(ts ToolSet, names []string) func(string) bool {
	var allow map[string]bool
	if names != nil {
		allow = map[string]bool{}
		for _, n := range names {
			allow[n] = true
			if t, terr := ts.Lookup(n); terr == nil {
				allow[t.Name()] = true
			}
		}
	}
	return func(name string) bool {
		return !slices.Contains(subagentExcluded, name) && (allow == nil || allow[name])
	}
}

// syncFrom gives the sub-session the parent's current approval mode and
// remembered approvals before each model request.
func (s *Session) syncFrom(p *Session) {
	mode := p.Mode()
	p.mu.Lock()
	rules := make([]string, 0, len(p.allowed))
	for r := range p.allowed {
		rules = append(rules, r)
	}
	p.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = mode
	if s.allowed == nil {
		s.allowed = map[string]bool{}
	}
	for _, r := range rules {
		s.allowed[r] = true
	}
}

// syncTo hands the approvals the user gave the subagent "for this session"
// back to the parent session.
func (s *Session) syncTo(p *Session) {
	s.mu.Lock()
	rules := make([]string, 0, len(s.allowed))
	for r := range s.allowed {
		rules = append(rules, r)
	}
	s.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.allowed == nil {
		p.allowed = map[string]bool{}
	}
	for _, r := range rules {
		p.allowed[r] = true
	}
}

// subagentHost is a sub-session's Host. The editor never sees the
// sub-session's own tool calls, messages or usage: its tool_call updates
// become entries of the SubagentRun shown under the parent's task call,
// and the rest stays inside. Permission prompts and edit reviews go to the
// editor under the parent's session and task call, their titles prefixed
// "[<subagent name>] ". A mode change (a review answered "always") is the
// parent's.
type subagentHost struct {
	parent   *Session
	callID   string
	name     string
	onUpdate func(tools.SubagentRun)

	// mu guards the fields below; onUpdate is called with it held, so
	// progress arrives in order.
	mu  sync.Mutex
	run tools.SubagentRun
	// index locates a sub-session call in run.ToolCalls; names are the
	// display names of the calls of the batch about to run.
	index map[string]int
	names map[string]string
}

// expect records the display names of a batch's calls before it runs
// (the tool_call update carries only the title).
func (h *subagentHost) expect(calls []ToolCall, ts ToolSet) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range calls {
		name := c.Name
		if t, terr := ts.Lookup(c.Name); terr == nil {
			name = t.DisplayName()
		}
		h.names[c.ID] = name
	}
}

func (h *subagentHost) setTurns(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.run.Turns = n
	h.emitLocked()
}

func (h *subagentHost) calls() []tools.SubagentToolCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.run.ToolCalls)
}

func (h *subagentHost) emitLocked() {
	run := h.run
	run.ToolCalls = slices.Clone(h.run.ToolCalls)
	h.onUpdate(run)
}

// Update implements Host.
func (h *subagentHost) Update(_ string, u Update) {
	switch u.Kind {
	case UpdateToolCall:
		h.mu.Lock()
		defer h.mu.Unlock()
		name := h.names[u.ToolCallID]
		if name == "" {
			name = u.Title
		}
		h.index[u.ToolCallID] = len(h.run.ToolCalls)
		h.run.ToolCalls = append(h.run.ToolCalls, tools.SubagentToolCall{Name: name, Title: u.Title, Status: u.Status})
		h.emitLocked()
	case UpdateToolCallUpd:
		if u.Status == "" {
			return
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		i, ok := h.index[u.ToolCallID]
		if !ok || h.run.ToolCalls[i].Status == u.Status {
			// Live output of a running call changes nothing here.
			return
		}
		h.run.ToolCalls[i].Status = u.Status
		h.emitLocked()
	case UpdateMode:
		if u.CurrentModeID != "" && u.CurrentModeID != h.parent.Mode() {
			_ = h.parent.SetMode(u.CurrentModeID)
		}
	}
}

func (h *subagentHost) prefix(title string) string { return "[" + h.name + "] " + title }

// CanAsk implements Host.
func (h *subagentHost) CanAsk() bool { return h.parent.host().CanAsk() }

// RequestPermission implements Host.
func (h *subagentHost) RequestPermission(ctx context.Context, _ string, req PermissionRequest) (PermissionAnswer, error) {
	req.ToolCallID = h.callID
	req.Title = h.prefix(req.Title)
	if req.Confirmation != nil {
		c := *req.Confirmation
		c.Title = h.prefix(c.Title)
		req.Confirmation = &c
	}
	return h.parent.host().RequestPermission(ctx, h.parent.id, req)
}

// ReviewEdit implements Host.
func (h *subagentHost) ReviewEdit(ctx context.Context, _ string, req EditReview) (EditAnswer, error) {
	req.ToolCallID = h.callID
	req.Title = h.prefix(req.Title)
	return h.parent.host().ReviewEdit(ctx, h.parent.id, req)
}

// ApplyToBuffer implements tools.Host.
func (h *subagentHost) ApplyToBuffer(ctx context.Context, path string, version int32, newText string) error {
	return h.parent.host().ApplyToBuffer(ctx, path, version, newText)
}

// CanApplyToBuffers implements tools.Host.
func (h *subagentHost) CanApplyToBuffers() bool { return h.parent.host().CanApplyToBuffers() }

// SyncFile implements tools.ClientFiles when the editor serves files: a
// subagent reads and writes the editor's buffers like its parent, in the
// parent's session (the only one the editor knows). Its shell commands run
// locally, since its tool calls are not shown to the editor one by one.
func (h *subagentHost) SyncFile(ctx context.Context, _ string, path string) error {
	if cf, ok := h.parent.host().(tools.ClientFiles); ok {
		return cf.SyncFile(ctx, h.parent.id, path)
	}
	return nil
}

// WriteFile implements tools.ClientFiles; see SyncFile.
func (h *subagentHost) WriteFile(ctx context.Context, _ string, path, text string) (bool, error) {
	if cf, ok := h.parent.host().(tools.ClientFiles); ok {
		return cf.WriteFile(ctx, h.parent.id, path, text)
	}
	return false, nil
}

// CodeQuery implements tools.CodeIntel when the parent's editor does: a
// subagent asks the same language servers, in the parent's session.
func (h *subagentHost) CodeQuery(ctx context.Context, _ string, q codeintel.Query) (codeintel.Answer, error) {
	if ci, ok := h.parent.host().(tools.CodeIntel); ok {
		return ci.CodeQuery(ctx, h.parent.id, q)
	}
	return codeintel.Answer{}, &codeintel.UnavailableError{Message: "No language server is available to this subagent."}
}

// CodeDiagnostics implements tools.CodeIntel; see CodeQuery.
func (h *subagentHost) CodeDiagnostics(ctx context.Context, _ string, q codeintel.DiagnosticsQuery) (codeintel.Report, error) {
	if ci, ok := h.parent.host().(tools.CodeIntel); ok {
		return ci.CodeDiagnostics(ctx, h.parent.id, q)
	}
	return codeintel.Report{}, &codeintel.UnavailableError{Message: "No language server is available to this subagent."}
}
