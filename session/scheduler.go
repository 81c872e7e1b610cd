package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/qwen-ls/qwen-ls/tools"
)

// Call states (tools.md §5.2) as far as the model and editor see them.
const (
	stateSuccess   = "success"
	stateError     = "error"
	stateCancelled = "cancelled"
)

// Cancellation reasons (tools.md §5.4, §6.5).
const (
	reasonBeforeRun   = "The user cancelled the turn before this call ran."
	reasonWhileRun    = "The user cancelled the turn while this call was running."
	reasonRejected    = "The user rejected this call."
	repeatedFailure   = "\n\nWARNING: repeated failure. This exact call has now failed %d times in a row with the same error. Do not retry it unchanged: re-read the files involved, change the arguments, or take a different approach."
	planModeBlockText = "Tool call %q was not executed because plan mode is active.\n<system-reminder>\nThis session is in plan mode, so nothing may change yet: no file edits, no commands with side effects, no configuration changes, no commits. Use read-only tools to learn what you need, then call exit_plan_mode with your plan and wait for the user to approve it. Keep to this even if earlier messages asked for changes.\n</system-reminder>"
)

// PlanModeChecker is implemented by tools that plan mode allows only for
// some arguments (run_shell_command with read-only commands).
type PlanModeChecker interface {
	AllowedInPlanMode(params map[string]any) bool
}

// callRun is one call going through the nine steps.
type callRun struct {
	tc     ToolCall
	tool   tools.Tool
	params map[string]any
	// lookupErr and argErr end the call before it starts.
	lookupErr *tools.ToolError
	argErr    *tools.ToolError

	state  string
	result tools.Result
	// content is the tool message for the model.
	content string
	// reason is the cancellation reason.
	reason string
	// userRejected: the user turned the call down (a dismissed prompt
	// counts); hasFeedback: with a reason for the model.
	userRejected bool
	hasFeedback  bool
	// approved is set once the permission flow let the call run.
	approved bool
	call     *tools.Call
	// forced: an ask rule demands the prompt (no "always" options).
	forced bool
	// title, kind and locs are what the call's tool_call showed.
	title, kind string
	locs        []Location
	// review is the person's hunk-by-hunk decision on a proposal they
	// rejected whole (an accepted one's is in its FileDiff).
	review *tools.ReviewReport
	// displayed is set once the final update went to the editor.
	displayed atomic.Bool
}

type batchResult struct {
	messages []Message
	// allRejected: every call was rejected by the user without feedback.
	allRejected bool
	// runs are the calls as they ended.
	runs []*callRun
}

// runBatch takes the calls of one model response through validation,
// confirmation, execution and the response to the model (tools.md §5).
// The calls in refused (by index; see screenCalls) fail with that error
// without being looked up.
func (s *Session) runBatch(ctx context.Context, ts ToolSet, calls []ToolCall, cutOff bool, refused map[int]*tools.ToolError) batchResult {
	host := s.host()
	runs := make([]*callRun, len(calls))
	for i, tc := range calls {
		r := &callRun{tc: tc}
		runs[i] = r
		title, kind := tc.Name, string(tools.KindOther)
		if !validToolName(tc.Name) {
			title = quoteName(tc.Name)
		}
		var locs []Location
		var tool tools.Tool
		terr := refused[i]
		if terr == nil {
			tool, terr = ts.Lookup(tc.Name)
		}
		if terr != nil {
			r.lookupErr = terr
		} else {
			r.tool = tool
			kind = kindOf(tool)
			title = tool.DisplayName()
			params, perr := tools.PrepareArgs(tool, tc.Arguments)
			if perr != nil {
				r.argErr = perr
			} else {
				r.params = params
				title = tools.GuardDescribe(tool, params)
				if sd, ok := tool.(tools.SessionDescriber); ok {
					if d := sd.DescribeSession(s.id, params); d != "" {
						title = d
					}
				}
				locs = locations(tool, params)
			}
		}
		r.title, r.kind, r.locs = title, kind, locs
		host.Update(s.id, Update{Kind: UpdateToolCall, ToolCallID: tc.ID, Title: title, ToolKind: kind,
			Status: StatusPending, Locations: locs, RawInput: rawInput(tc.Arguments)})
	}

	for _, group := range groupCalls(runs) {
		if ctx.Err() != nil {
			for _, r := range group {
				r.cancel(reasonBeforeRun)
			}
			continue
		}
		// Confirmations come one at a time in call order; approved
		// read-only calls then run in parallel.
		for _, r := range group {
			if ctx.Err() != nil {
				r.cancel(reasonBeforeRun)
				continue
			}
			s.prepare(ctx, r, cutOff)
		}
		s.executeGroup(ctx, group)
		for _, r := range group {
			if r.state != "" {
				s.display(r)
			}
		}
	}

	out := batchResult{allRejected: true, runs: runs}
	var media []Part
	for _, r := range runs {
		if r.state == "" {
			r.cancel(reasonBeforeRun)
		}
		msg, parts := s.toolMessage(r)
		out.messages = append(out.messages, Message{Role: "tool", ToolCallID: r.tc.ID, Text: msg})
		media = append(media, parts...)
		if !r.userRejected || r.hasFeedback {
			out.allRejected = false
		}
		s.display(r)
	}
	if len(media) > 0 {
		out.messages = append(out.messages, Message{Role: "user", Parts: media})
	}
	return out
}

func (r *callRun) cancel(reason string) {
	if r.state != "" {
		return
	}
	r.state, r.reason = stateCancelled, reason
}

func (r *callRun) fail(terr *tools.ToolError) {
	r.state = stateError
	r.result = tools.Result{Error: terr}
}

// groupCalls cuts the batch into groups: consecutive read-only calls form
// one parallel group; every other call is a group of its own.
func groupCalls(runs []*callRun) [][]*callRun {
	var groups [][]*callRun
	for _, r := range runs {
		ro := r.tool != nil && r.lookupErr == nil && r.tool.Kind().ReadOnly()
		if ro && len(groups) > 0 {
			last := groups[len(groups)-1]
			if last[0].tool != nil && last[0].lookupErr == nil && last[0].tool.Kind().ReadOnly() {
				groups[len(groups)-1] = append(last, r)
				continue
			}
		}
		groups = append(groups, []*callRun{r})
	}
	return groups
}

// prepare runs steps 3-5 for one call: lookup and argument errors, the
// plan-mode block, shouldConfirm, and the permission flow.
func (s *Session) prepare(ctx context.Context, r *callRun, cutOff bool) {
	switch {
	case r.lookupErr != nil:
		r.fail(r.lookupErr)
		return
	case r.argErr != nil:
		r.fail(r.argErr)
		return
	case cutOff && r.tool.Kind() == tools.KindEdit:
		r.fail(tools.NewError(tools.ErrorOutputTruncated, fmt.Sprintf("Your response was cut off by the output token limit, so this %s call may be incomplete and was not executed. Write large content in smaller pieces: create the file with a short skeleton using write_file, then add sections with edit.", r.tc.Name)))
		return
	}
	r.call = &tools.Call{ID: r.tc.ID, SessionID: s.id, Name: r.tc.Name, Host: s.host(), Ledger: s.ledger, Model: s.toolModel()}
	mode := s.Mode()
	rd := s.decide(r.tool, r.params)
	if rd.deniedBy != "" {
		r.fail(deniedError(rd.deniedBy, r.tc.Name))
		return
	}
	if mode == ModePlan && !allowedInPlanMode(r.tool, r.params) {
		r.state = stateError
		r.result = tools.Result{Error: tools.NewError(tools.ErrorExecutionDenied, fmt.Sprintf(planModeBlockText, r.tc.Name)), Display: tools.Markdown("Blocked by plan mode.")}
		r.content = fmt.Sprintf(planModeBlockText, r.tc.Name)
		return
	}
	conf, terr := tools.GuardConfirm(ctx, r.tool, r.call, r.params)
	if terr != nil {
		r.fail(terr)
		return
	}
	r.call.Confirmation = conf
	if conf != nil && conf.Unconfined && rd.allowed && !rd.ask {
		// Allow rules skip read-only sub-commands, which run unasked
		// only inside a sandbox; there is none, so the mode decides.
		rd.allowed, rd.narrowed = false, nil
	}
	if conf != nil {
		switch pr := s.protectedCall(r, conf); {
		case pr.Forbidden:
			r.fail(tools.NewError(tools.ErrorExecutionDenied, fmt.Sprintf("This %s call was not run: %s.", r.tc.Name, pr.Reason)))
			return
		case pr.Reason != "" && (mode != ModeYolo || pr.EvenInYolo):
			// A protected file always asks, whatever the allow rules and
			// the approval mode, and the question says why.
			conf.Title += " (protected: " + pr.Reason + ")"
			rd.allowed, rd.narrowed = false, nil
			r.forced = true
		}
	}
	switch {
	case rd.ask:
		// An ask rule forces a prompt, without the "always" options.
		if conf == nil {
			conf = &tools.Confirmation{Title: "Confirm " + r.tool.DisplayName(), Details: &tools.InfoConfirmation{Prompt: tools.GuardDescribe(r.tool, r.params)}}
		}
		r.forced = true
	case conf == nil:
		// The tool asked for nothing (for the shell: a read-only verdict).
		r.approved, r.call.Approval = true, tools.ApprovalNotNeeded
		s.offerOutsideSandbox(r)
		return
	case rd.allowed:
		r.approved, r.call.Approval = true, tools.ApprovalRule
		s.offerOutsideSandbox(r)
		return
	case rd.narrowed != nil:
		rd.narrowed.Title = conf.Title
		conf = rd.narrowed
	}
	if !r.forced && !needsPrompt(mode, conf) {
		r.approved, r.call.Approval = true, tools.ApprovalRule
		s.offerOutsideSandbox(r)
		return
	}
	host := s.host()
	if !host.CanAsk() {
		r.fail(tools.NewError(tools.ErrorExecutionDenied, fmt.Sprintf("%s needs the user's permission, but this client cannot ask for it, so the call was denied. An allow rule or another approval mode can permit it.", r.tc.Name)))
		return
	}
	s.ask(ctx, r, conf)
	if r.approved {
		r.call.Approval = tools.ApprovalUser
	}
}

// offerOutsideSandbox lets a call that runs unasked ask the person, when
// the sandbox stopped it, whether it may run once outside the sandbox: an
// ordinary permission request that says what was blocked.
func (s *Session) offerOutsideSandbox(r *callRun) {
	// Plan mode changes nothing, even with a yes; yolo asks nothing, so
	// the refusal goes back to the model, naming what was refused.
	if !s.host().CanAsk() || s.Mode() == ModePlan || s.Mode() == ModeYolo {
		return
	}
	r.call.AskOutsideSandbox = func(ctx context.Context, reason string) (bool, error) {
		command, _ := tools.String(r.params, "command")
		conf := tools.ShellConfirmation(command, nil)
		conf.Title = "Run outside the sandbox? The command was " + reason
		req := PermissionRequest{ToolCallID: r.tc.ID, Title: conf.Title, Kind: kindOf(r.tool), RawInput: rawInput(r.tc.Arguments),
			Locations: locations(r.tool, r.params), Confirmation: conf,
			Content: []ToolContent{{Type: "content", Content: textBlock("The command was " + reason + ". Run it once outside the sandbox, with no protection?")}},
			Options: []PermissionOption{
				{OptionProceedOnce, "Yes, run it outside the sandbox once", kindAllowOnce},
				{OptionCancel, "No", kindRejectOnce},
			}}
		ans, err := s.host().RequestPermission(ctx, s.id, req)
		if err != nil {
			return false, err
		}
		return !ans.Cancelled && ans.OptionID == OptionProceedOnce, nil
	}
}

// protectedCall says whether a call changes a protected file: an edit-kind
// call by the path of its proposal or its locations
// (tools.Env.ProtectedWrite), a shell command by the sub-commands that are
// not read-only (tools.Env.ShellCommandProtection). prepare asks only for calls
// whose tool wants a confirmation, the only ones the answer changes.
func (s *Session) protectedCall(r *callRun, conf *tools.Confirmation) tools.Protection {
	env := s.mgr.opts.Env
	var best tools.Protection
	if sh := shellOf(env, r.tool, r.params); sh != nil {
		return env.ShellCommandProtection(sh.analysis)
	}
	if r.tool.Kind() != tools.KindEdit {
		return best
	}
	if ec, ok := conf.Details.(*tools.EditConfirmation); ok {
		if pr := env.EditProtection(ec.FilePath, ec.OldText, ec.NewText); pr.Forbidden {
			return pr
		}
	}
	for _, p := range protectedCandidates(r, conf) {
		pr := env.ProtectedWrite(p)
		if pr.Forbidden {
			return pr
		}
		if best.Reason == "" {
			best = pr
		}
	}
	return best
}

func protectedCandidates(r *callRun, conf *tools.Confirmation) []string {
	var paths []string
	if ec, ok := conf.Details.(*tools.EditConfirmation); ok && ec.FilePath != "" {
		paths = append(paths, ec.FilePath)
	}
	for _, l := range r.tool.Locations(r.params) {
		paths = append(paths, l.Path)
	}
	return paths
}

func allowedInPlanMode(t tools.Tool, params map[string]any) bool {
	switch t.Kind() {
	case tools.KindRead, tools.KindSearch, tools.KindFetch, tools.KindThink:
		return true
	}
	if t.Name() == "task" {
		return true
	}
	if pc, ok := t.(PlanModeChecker); ok {
		return pc.AllowedInPlanMode(params)
	}
	return false
}

// needsPrompt applies the approval mode (tools.md §6.4).
func needsPrompt(mode string, conf *tools.Confirmation) bool {
	switch mode {
	case ModeYolo:
		return false
	case ModeAutoEdit:
		t := conf.Type()
		return t != tools.ConfirmEdit && t != tools.ConfirmInfo
	}
	return true
}

// executeGroup runs the approved calls of a group, in parallel when the
// group has several (they are all read-only then).
func (s *Session) executeGroup(ctx context.Context, group []*callRun) {
	limit := 10
	if v, err := strconv.Atoi(os.Getenv("QWEN_CODE_MAX_TOOL_CONCURRENCY")); err == nil && v > 0 {
		limit = v
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for _, r := range group {
		if r.state != "" || !r.approved {
			continue
		}
		if ctx.Err() != nil {
			r.cancel(reasonBeforeRun)
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(r *callRun) {
			defer wg.Done()
			defer func() { <-sem }()
			s.execute(ctx, r)
			s.display(r)
		}(r)
		if len(group) == 1 {
			wg.Wait()
		}
	}
	wg.Wait()
}

// execute runs step 6-7 for one approved call.
func (s *Session) execute(ctx context.Context, r *callRun) {
	host := s.host()
	r.call.Mode = s.Mode()
	host.Update(s.id, Update{Kind: UpdateToolCallUpd, ToolCallID: r.tc.ID, Status: StatusInProgress})
	cp := s.beginCheckpoint(ctx, r.tc.ID, r.tool, r.params)
	defer s.endCheckpoint(context.WithoutCancel(ctx), r.tc.ID, cp)
	res, err := tools.Guard(ctx, r.tool, r.call, r.params, func(o tools.Output) {
		if ctx.Err() != nil {
			return
		}
		host.Update(s.id, Update{Kind: UpdateToolCallUpd, ToolCallID: r.tc.ID, Status: StatusInProgress, Content: liveContent(o)})
	})
	if ctx.Err() != nil {
		// A result that arrives after cancellation is discarded.
		r.cancel(reasonWhileRun)
		return
	}
	if err != nil {
		r.fail(tools.NewError(tools.ErrorUnhandledException, "The tool failed unexpectedly: "+err.Error()))
		return
	}
	r.result = res
	if res.Error != nil {
		r.state = stateError
	} else {
		r.state = stateSuccess
	}
}

func liveContent(o tools.Output) []ToolContent {
	if o.Display != nil {
		if items := displayContent(o.Display); items != nil {
			return items
		}
	}
	return []ToolContent{{Type: "content", Content: textBlock(o.Text)}}
}

// toolMessage builds the model's view of a finished call (tools.md §5.5),
// and the media parts to attach after the batch.
func (s *Session) toolMessage(r *callRun) (string, []Part) {
	switch r.state {
	case stateCancelled:
		return "[Cancelled] " + r.reason, nil
	case stateError:
		if r.content != "" { // plan-mode block: an output, not an error
			return r.content, nil
		}
		msg := r.result.Error.Message
		sig := r.tc.Name + ":" + msg
		s.mu.Lock()
		if sig == s.failSig {
			s.failCount++
		} else {
			s.failSig, s.failCount = sig, 1
		}
		count := s.failCount
		s.mu.Unlock()
		if count >= 3 {
			msg += fmt.Sprintf(repeatedFailure, count)
		}
		return msg, nil
	}
	s.mu.Lock()
	s.failSig, s.failCount = "", 0
	s.mu.Unlock()
	var lines []string
	var media []Part
	for _, p := range r.result.LLMContent {
		if p.InlineData == nil {
			lines = append(lines, p.Text)
			continue
		}
		kind := mediaKind(p.InlineData.MimeType)
		if s.acceptsModality(kind) {
			lines = append(lines, fmt.Sprintf("[%s content attached in the following message]", p.InlineData.MimeType))
			media = append(media,
				Part{Type: "text", Text: fmt.Sprintf("Attachment from tool call %s (%s): %s", r.tc.ID, r.tc.Name, p.InlineData.DisplayName)},
				Part{Type: partType(kind), MIME: p.InlineData.MimeType, Data: p.InlineData.Data, Name: p.InlineData.DisplayName})
		} else {
			lines = append(lines, fmt.Sprintf("[%s content omitted: the model does not accept %s input]", p.InlineData.MimeType, kind))
		}
	}
	text := strings.Join(lines, "\n")
	if text == "" {
		text = "The tool finished with no output."
	}
	return text, media
}

func mediaKind(mime string) string {
	switch {
	case strings.HasPrefix(mime, "image/"):
		return "image"
	case strings.HasPrefix(mime, "audio/"):
		return "audio"
	case strings.HasPrefix(mime, "video/"):
		return "video"
	case mime == "application/pdf":
		return "pdf"
	}
	return "file"
}

func partType(kind string) string {
	if kind == "pdf" {
		return "file"
	}
	return kind
}

func (s *Session) acceptsModality(kind string) bool {
	return s.mgr.opts.Env.Settings().Bool("model.modalities."+kind, false)
}

// display sends the final tool_call_update (tools.md §5.6), once.
func (s *Session) display(r *callRun) {
	if r.displayed.Swap(true) {
		return
	}
	status := StatusCompleted
	if r.state != stateSuccess {
		status = StatusFailed
	}
	var content []ToolContent
	switch {
	case r.state == stateCancelled && r.result.Display != nil:
		content = displayContent(r.result.Display)
	case r.state == stateCancelled:
		content = []ToolContent{{Type: "content", Content: textBlock("[Cancelled] " + r.reason)}}
	case r.state == stateError && r.result.Display != nil:
		content = displayContent(r.result.Display)
	case r.state == stateError:
		content = []ToolContent{{Type: "content", Content: textBlock(r.result.Error.Message)}}
	default:
		content = displayContent(r.result.Display)
	}
	if todos, ok := r.result.Display.(*tools.TodoList); ok && r.state == stateSuccess {
		entries := planEntries(todos.Todos)
		s.host().Update(s.id, Update{Kind: UpdatePlan, Entries: entries})
		s.mu.Lock()
		s.plan = entries
		s.mu.Unlock()
		s.record(event{Type: "todos", Todos: entries})
	}
	outcome := OutcomeCompleted
	switch {
	case r.userRejected:
		outcome = OutcomeRejected
	case r.state == stateCancelled:
		outcome = OutcomeCancelled
	case r.state != stateSuccess:
		outcome = OutcomeFailed
	}
	raw := rawOutput(r)
	if len(content) == 1 && content[0].Content != nil && r.state != stateSuccess {
		// The error shown is the one the model got: sending it twice
		// makes clients that print both (acpx) show it twice.
		var v struct{ Error string }
		if json.Unmarshal(raw, &v) == nil && v.Error == content[0].Content.Text {
			raw = nil
		}
	}
	meta := outcomeMeta(outcome)
	meta.Qwen.Review = reviewMeta(r)
	u := Update{Kind: UpdateToolCallUpd, ToolCallID: r.tc.ID, Status: status, RawOutput: raw, Meta: meta}
	if content != nil {
		u.Content = content
	}
	s.host().Update(s.id, u)
	s.recordShown(r, status, meta.Qwen, content)
}

// reviewMeta is how the person decided a reviewed edit hunk by hunk, for
// the call's last update; nil when they did not.
func reviewMeta(r *callRun) *ReviewMeta {
	rep := r.review
	if fd, ok := r.result.Display.(*tools.FileDiff); ok && r.state == stateSuccess && fd.Review != nil {
		rep = fd.Review
	}
	if rep == nil || len(rep.Hunks) < 2 {
		return nil
	}
	return &ReviewMeta{Kept: rep.Kept(), Total: len(rep.Hunks), Summary: rep.Summary(), Hunks: rep.Hunks}
}

// planEntries is a todo list as the editor's plan.
func planEntries(todos []tools.Todo) []PlanEntry {
	entries := make([]PlanEntry, 0, len(todos))
	for _, td := range todos {
		entries = append(entries, PlanEntry{Content: td.Content, Priority: "medium", Status: string(td.Status)})
	}
	return entries
}

func displayContent(d tools.Display) []ToolContent {
	switch d := d.(type) {
	case tools.Markdown:
		if d == "" {
			return nil
		}
		return []ToolContent{{Type: "content", Content: textBlock(string(d))}}
	case *tools.FileDiff:
		nt := d.NewContent
		return []ToolContent{{Type: "diff", Path: d.FilePath, OldText: d.OriginalContent, NewText: &nt}}
	case *tools.PlanSummary:
		return []ToolContent{{Type: "content", Content: textBlock(d.Message + "\n\n" + d.Plan)}}
	case *tools.TerminalDisplay:
		return []ToolContent{{Type: "terminal", TerminalID: d.TerminalID}}
	case *tools.SubagentRun:
		var lines []string
		for _, c := range d.ToolCalls {
			lines = append(lines, fmt.Sprintf("%s: %s (%s)", c.Name, c.Title, c.Status))
		}
		return []ToolContent{{Type: "content", Content: textBlock(strings.Join(lines, "\n"))}}
	}
	return nil
}

func locations(t tools.Tool, params map[string]any) []Location {
	var out []Location
	for _, l := range t.Locations(params) {
		out = append(out, Location{Path: l.Path, Line: l.Line})
	}
	return out
}

// rawOutput is a finished call's result as the model reads it, for
// clients that show the raw exchange: {output} after success, {error}
// otherwise.
func rawOutput(r *callRun) json.RawMessage {
	var v map[string]string
	switch {
	case r.state == stateSuccess:
		v = map[string]string{"output": r.result.Text()}
	case r.state == stateCancelled:
		v = map[string]string{"error": "[Cancelled] " + r.reason}
	case r.state == stateError && r.content != "":
		v = map[string]string{"output": r.content}
	case r.state == stateError && r.result.Error != nil:
		v = map[string]string{"error": r.result.Error.Message}
	default:
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}

// rawInput is the arguments as sent, as JSON when they parse, else as a
// JSON string.
func rawInput(args string) json.RawMessage {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage("{}")
	}
	// Validate the string in place: a large call's arguments are
	// megabytes, and the one copy kept is the RawMessage below.
	if json.Valid(unsafe.Slice(unsafe.StringData(args), len(args))) {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(args)
	return b
}

// toolModel returns the session's model for tools, or nil when none is
// configured.
func (s *Session) toolModel() tools.Model {
	m, err := s.newModel()
	if err != nil {
		return nil
	}
	return toolModel{m: m, s: s}
}

// toolModel is the session's model as tools see it (tools.Model); s is the
// session whose call uses it, the parent of any subagent it runs.
type toolModel struct {
	m Model
	s *Session
}

func (t toolModel) Complete(ctx context.Context, system, user string) (string, error) {
	resp, err := t.m.Complete(ctx, ModelRequest{Model: t.m.Name(), Messages: []Message{{Role: "system", Text: system}, {Role: "user", Text: user}}})
	if err != nil {
		return "", err
	}
	return resp.Text, nil
}
