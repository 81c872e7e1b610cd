package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/diff"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// applyWait is how long the server waits for the overlay to show an edit
// the editor said it applied (protocol.md §6.3).
const applyWait = 2 * time.Second

// host is the session.Host of one connection: it routes confirmations to
// the editor (qwen/proposeEdit and qwen/requestPermission for rich clients,
// window/showMessageRequest for plain ones) and applies accepted edits to
// open buffers with workspace/applyEdit.
type host struct {
	s *Server

	seq atomic.Int64
	// mu guards deferred: reviews a deferredReview client answered
	// "deferred", waiting for qwen/resolveReview.
	mu       sync.Mutex
	deferred map[deferredKey]chan json.RawMessage
}

type deferredKey struct{ session, call string }

// Update implements session.Host: rich clients get qwen/sessionUpdate.
func (h *host) Update(sessionID string, u session.Update) {
	h.s.plainUpdate(sessionID, u)
	if u.Kind == session.UpdateToolCall {
		if p := h.s.turns.get(sessionID); p != nil {
			p.report(u.Title)
		}
		if !h.s.clientCaps().Rich {
			h.s.log.Infof("qwen: %s", u.Title)
		}
	}
	if u.Kind == session.UpdateToolCallUpd && u.Status == session.StatusFailed && !h.s.clientCaps().Rich {
		if items, ok := u.Content.([]session.ToolContent); ok && len(items) > 0 && items[0].Content != nil {
			h.s.log.Warnf("qwen: a tool call failed: %s", firstLine(items[0].Content.Text))
		}
	}
	if !h.s.clientCaps().SessionUpdates {
		return
	}
	method := "qwen/sessionUpdate"
	var also *session.Update
	if h.s.opts.ACP {
		method = "session/update"
		u, also = h.s.acpConfigUpdate(sessionID, u)
		u = acpUpdate(u)
	}
	params := map[string]any{"sessionId": sessionID, "update": u}
	select {
	case <-h.s.conn.DisconnectNotify():
		return
	default:
	}
	// Written straight to the stream: an update may carry a whole file.
	_ = h.s.stream.notify(method, params)
	if also != nil {
		_ = h.s.stream.notify(method, map[string]any{"sessionId": sessionID, "update": *also})
	}
}

// CanAsk implements session.Host: rich clients ask through qwen/*, plain
// ones through window/showMessageRequest when they support it.
func (h *host) CanAsk() bool {
	c := h.s.clientCaps()
	if c.Rich {
		return c.ProposeEdit || c.RequestPermission
	}
	return c.ShowMessage
}

// call sends a request to the editor with an id of our own, so that a
// cancelled turn can withdraw it with $/cancelRequest. The wait belongs to
// the caller: it ends with the answer, the caller's context or the
// connection, and nothing is left waiting for an answer nobody wants.
func (h *host) call(ctx context.Context, method string, params any, result any) error {
	id := jsonrpc2.ID{Str: fmt.Sprintf("qwen-ls-%d", h.seq.Add(1)), IsString: true}
	w, err := h.s.conn.DispatchCall(context.Background(), method, params, jsonrpc2.PickID(id))
	if err != nil {
		return err
	}
	err = w.Wait(ctx, result)
	if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
		return err
	}
	if h.s.opts.ACP {
		// ACP's name and shape for it.
		_ = h.s.conn.Notify(context.Background(), "$/cancel_request", map[string]any{"requestId": id.Str})
	} else {
		_ = h.s.conn.Notify(context.Background(), "$/cancelRequest", map[string]any{"id": id.Str})
	}
	return ctx.Err()
}

// ReviewEdit implements session.Host.
func (h *host) ReviewEdit(ctx context.Context, sessionID string, r session.EditReview) (session.EditAnswer, error) {
	if h.s.opts.ACP {
		return h.acpReviewEdit(ctx, sessionID, r)
	}
	c := h.s.clientCaps()
	if !c.Rich {
		return h.reviewPlain(ctx, r)
	}
	if !c.ProposeEdit {
		return session.EditAnswer{}, errors.New("this editor does not review edits (experimental.qwen.proposeEdit)")
	}
	params := map[string]any{
		"sessionId":  sessionID,
		"toolCallId": r.ToolCallID,
		"title":      r.Title,
		"uri":        h.s.pathToURI(r.Path),
		"version":    r.Version,
		"isNewFile":  r.IsNewFile,
		"oldText":    r.OldText,
		"newText":    r.NewText,
		"edits":      hunkEdits(r.OldText, r.NewText, c.Encoding),
	}
	var raw json.RawMessage
	wait := h.expectDeferred(sessionID, r.ToolCallID, c.DeferredReview)
	if err := h.call(ctx, "qwen/proposeEdit", params, &raw); err != nil {
		h.withdrawDeferred(sessionID, r.ToolCallID, wait)
		return session.EditAnswer{}, err
	}
	raw, err := h.resolve(ctx, sessionID, r.ToolCallID, raw, wait)
	if err != nil {
		return session.EditAnswer{}, err
	}
	var ans struct {
		Outcome      string          `json:"outcome"`
		FinalText    *string         `json:"finalText"`
		KeptHunks    json.RawMessage `json:"keptHunks"`
		HunkFeedback json.RawMessage `json:"hunkFeedback"`
		Feedback     string          `json:"feedback"`
		Always       bool            `json:"always"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return session.EditAnswer{}, fmt.Errorf("the editor's answer to qwen/proposeEdit is malformed: %w", err)
	}
	out := session.EditAnswer{Outcome: ans.Outcome, FinalText: ans.FinalText, Feedback: ans.Feedback, Always: ans.Always}
	kept := len(ans.KeptHunks) > 0 && string(ans.KeptHunks) != "null"
	switch {
	case kept && ans.FinalText != nil:
		// The person typed in the proposal: the text they wrote is the
		// decision, whatever hunks the answer also names.
		h.s.log.Infof("qwen: the review of %s sent finalText and keptHunks; finalText wins", r.ToolCallID)
	case kept && (ans.Outcome == "" || ans.Outcome == "accepted"):
		out.Outcome, out.FinalText, out.Kept = h.keptAnswer(r, ans.KeptHunks)
	}
	if len(ans.HunkFeedback) > 0 && string(ans.HunkFeedback) != "null" {
		out.Reasons = h.hunkReasons(r, ans.HunkFeedback)
	}
	switch out.Outcome {
	case "accepted", "rejected", "cancelled":
	default:
		// Anything else is not a decision to apply.
		out.Outcome = "cancelled"
	}
	return out, nil
}

// keptAnswer turns the indices of the hunks a person kept into the answer
// (protocol.md "Reviews and permissions"): none kept is a rejection, all
// kept accepts the proposal, some kept accepts the old text with only those
// hunks applied. The indices are into the edits sent with qwen/proposeEdit,
// which are the hunks of the same two texts. An index that is not an
// integer, is out of range or comes twice makes the whole answer a
// rejection: a malformed answer never writes anything.
// The decision of each hunk is returned as kept (nil for a malformed
// answer).
func (h *host) keptAnswer(r session.EditReview, raw json.RawMessage) (string, *string, []bool) {
	n := len(diff.Hunks(r.OldText, r.NewText))
	idx, err := keptIndices(raw, n)
	if err != nil {
		h.s.log.Warnf("qwen: the review of %s is taken as a rejection: keptHunks %s", r.ToolCallID, err)
		return "rejected", nil, nil
	}
	keep := make([]bool, n)
	for _, i := range idx {
		keep[i] = true
	}
	switch len(idx) {
	case 0:
		return "rejected", nil, keep
	case n:
		return "accepted", nil, keep
	}
	text := tools.ApplyKept(r.OldText, r.NewText, keep)
	return "accepted", &text, keep
}

// hunkReasons reads hunkFeedback: [{hunk, feedback}], the person's reason
// for rejecting each of those hunks (indices as in keptHunks). Reasons
// only tell the model why; they never change what is written. So a
// malformed list is left out whole, and an entry naming no hunk of the
// proposal is skipped, each with a warning in the log.
func (h *host) hunkReasons(r session.EditReview, raw json.RawMessage) map[int]string {
	var items []struct {
		Hunk     *json.Number `json:"hunk"`
		Feedback *string      `json:"feedback"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&items); err != nil {
		h.s.log.Warnf("qwen: the review of %s: hunkFeedback is not a list of {hunk, feedback}: %s", r.ToolCallID, clip(string(raw)))
		return nil
	}
	n := len(diff.Hunks(r.OldText, r.NewText))
	out := map[int]string{}
	for _, it := range items {
		if it.Hunk == nil || it.Feedback == nil {
			h.s.log.Warnf("qwen: the review of %s: a hunkFeedback entry lacks its hunk or feedback; skipped", r.ToolCallID)
			continue
		}
		i, err := strconv.Atoi(it.Hunk.String())
		if err != nil || i < 0 || i >= n {
			h.s.log.Warnf("qwen: the review of %s: hunkFeedback names hunk %s, not one of the %d proposed; skipped", r.ToolCallID, clip(it.Hunk.String()), n)
			continue
		}
		if fb := strings.TrimSpace(*it.Feedback); fb != "" {
			out[i] = fb
		}
	}
	return out
}

// keptIndices reads keptHunks: a JSON array of distinct integers in
// [0, n).
func keptIndices(raw json.RawMessage, n int) ([]int, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("is not an array of hunk indices: %s", clip(string(raw)))
	}
	seen := make(map[int]bool, len(items))
	out := make([]int, 0, len(items))
	for _, it := range items {
		var i int
		if err := json.Unmarshal(it, &i); err != nil || string(it) == "null" {
			return nil, fmt.Errorf("holds %s, which is not a hunk index", clip(string(it)))
		}
		if i < 0 || i >= n {
			return nil, fmt.Errorf("holds %d, outside the %d hunks proposed", i, n)
		}
		if seen[i] {
			return nil, fmt.Errorf("holds %d twice", i)
		}
		seen[i] = true
		out = append(out, i)
	}
	return out, nil
}

// clip shortens a value quoted in a log line.
func clip(s string) string {
	if len(s) > 40 {
		return strings.ToValidUTF8(s[:40], "") + "…"
	}
	return s
}

// RequestPermission implements session.Host.
func (h *host) RequestPermission(ctx context.Context, sessionID string, r session.PermissionRequest) (session.PermissionAnswer, error) {
	c := h.s.clientCaps()
	if !c.Rich {
		return h.permissionPlain(ctx, r)
	}
	if !c.RequestPermission {
		return session.PermissionAnswer{}, errors.New("this editor does not answer permission requests (experimental.qwen.requestPermission)")
	}
	toolCall := map[string]any{"toolCallId": r.ToolCallID, "title": r.Title, "kind": r.Kind, "rawInput": r.RawInput}
	if h.s.opts.ACP {
		// ACP clients merge the request's toolCall into the call they
		// show; a "Confirm …" title would replace the call's own for good.
		delete(toolCall, "title")
	}
	if len(r.Content) > 0 {
		toolCall["content"] = r.Content
	}
	if len(r.Locations) > 0 {
		toolCall["locations"] = r.Locations
	}
	params := map[string]any{"sessionId": sessionID, "toolCall": toolCall, "options": r.Options}
	var raw json.RawMessage
	method := "qwen/requestPermission"
	if h.s.opts.ACP {
		method = "session/request_permission"
	}
	wait := h.expectDeferred(sessionID, r.ToolCallID, c.DeferredReview)
	if err := h.call(ctx, method, params, &raw); err != nil {
		h.withdrawDeferred(sessionID, r.ToolCallID, wait)
		return session.PermissionAnswer{}, err
	}
	raw, err := h.resolve(ctx, sessionID, r.ToolCallID, raw, wait)
	if err != nil {
		return session.PermissionAnswer{}, err
	}
	return parsePermission(raw, r.Options)
}

// parsePermission reads {outcome: {outcome, optionId}} from a direct
// answer, or {outcome, optionId} from qwen/resolveReview.
func parsePermission(raw json.RawMessage, offered []session.PermissionOption) (session.PermissionAnswer, error) {
	var direct struct {
		Outcome json.RawMessage `json:"outcome"`
	}
	if err := json.Unmarshal(raw, &direct); err != nil {
		return session.PermissionAnswer{}, fmt.Errorf("the editor's permission answer is malformed: %w", err)
	}
	var inner struct {
		Outcome  string `json:"outcome"`
		OptionID string `json:"optionId"`
	}
	if len(direct.Outcome) > 0 && direct.Outcome[0] == '{' {
		json.Unmarshal(direct.Outcome, &inner)
	} else {
		json.Unmarshal(raw, &inner)
	}
	if inner.Outcome != "selected" {
		return session.PermissionAnswer{Cancelled: true}, nil
	}
	for _, o := range offered {
		if o.OptionID == inner.OptionID {
			return session.PermissionAnswer{OptionID: inner.OptionID}, nil
		}
	}
	// An option that was not offered is never taken as an allow.
	return session.PermissionAnswer{Cancelled: true}, nil
}

// expectDeferred registers a deferred review before the request goes out,
// so a qwen/resolveReview racing the "deferred" answer is not lost.
func (h *host) expectDeferred(sessionID, callID string, allowed bool) chan json.RawMessage {
	if !allowed {
		return nil
	}
	ch := make(chan json.RawMessage, 1)
	h.mu.Lock()
	if h.deferred == nil {
		h.deferred = map[deferredKey]chan json.RawMessage{}
	}
	h.deferred[deferredKey{sessionID, callID}] = ch
	h.mu.Unlock()
	return ch
}

// withdrawDeferred forgets a review whose request was cancelled before it
// was answered. A deferredReview client may have answered "deferred" in the
// meantime and shown its review, so it is also sent qwen/reviewCancelled;
// for a request it never answered, the notification names a tool call it
// does not know and it ignores it.
func (h *host) withdrawDeferred(sessionID, callID string, wait chan json.RawMessage) {
	h.dropDeferred(sessionID, callID)
	if wait != nil {
		_ = h.s.conn.Notify(context.Background(), "qwen/reviewCancelled", map[string]any{"sessionId": sessionID, "toolCallId": callID})
	}
}

func (h *host) dropDeferred(sessionID, callID string) {
	h.mu.Lock()
	delete(h.deferred, deferredKey{sessionID, callID})
	h.mu.Unlock()
}

// resolve returns the direct answer, or, for {outcome: "deferred"}, waits
// for qwen/resolveReview; a cancelled turn sends qwen/reviewCancelled.
func (h *host) resolve(ctx context.Context, sessionID, callID string, raw json.RawMessage, wait chan json.RawMessage) (json.RawMessage, error) {
	var probe struct {
		Outcome json.RawMessage `json:"outcome"`
	}
	json.Unmarshal(raw, &probe)
	if string(probe.Outcome) != `"deferred"` {
		h.dropDeferred(sessionID, callID)
		return raw, nil
	}
	if wait == nil {
		return nil, errors.New(`the editor answered "deferred" without advertising experimental.qwen.deferredReview`)
	}
	select {
	case ans := <-wait:
		return ans, nil
	case <-ctx.Done():
		h.dropDeferred(sessionID, callID)
		_ = h.s.conn.Notify(context.Background(), "qwen/reviewCancelled", map[string]any{"sessionId": sessionID, "toolCallId": callID})
		return nil, ctx.Err()
	}
}

// resolveReview handles qwen/resolveReview (protocol.md §6.5).
func (s *Server) resolveReview(ctx context.Context, req *request) (any, error) {
	var p struct {
		SessionID  string `json:"sessionId"`
		ToolCallID string `json:"toolCallId"`
		Outcome    string `json:"outcome"`
	}
	if err := unmarshalParams(req, &p); err != nil {
		return nil, err
	}
	h := s.host
	h.mu.Lock()
	ch, ok := h.deferred[deferredKey{p.SessionID, p.ToolCallID}]
	delete(h.deferred, deferredKey{p.SessionID, p.ToolCallID})
	h.mu.Unlock()
	if !ok {
		return nil, rpcError(codeInvalidParams, "no review is waiting for tool call %q of session %q (unknown, already resolved or cancelled)", p.ToolCallID, p.SessionID)
	}
	ch <- append(json.RawMessage(nil), req.Params...)
	return map[string]any{}, nil
}

// hunkEdits are the proposal's hunks as LSP TextEdits in the negotiated
// encoding.
func hunkEdits(oldText, newText string, enc workspace.Encoding) []map[string]any {
	edits := []map[string]any{}
	for _, hk := range diff.Hunks(oldText, newText) {
		edits = append(edits, textEdit(oldText, hk.Start, hk.End, hk.Text, enc))
	}
	return edits
}

func textEdit(text string, start, end int, newText string, enc workspace.Encoding) map[string]any {
	s, e := workspace.PositionOf(text, start, enc), workspace.PositionOf(text, end, enc)
	return map[string]any{
		"range": map[string]any{
			"start": map[string]any{"line": s.Line, "character": s.Character},
			"end":   map[string]any{"line": e.Line, "character": e.Character},
		},
		"newText": newText,
	}
}

// minimalEdits are the edits workspace/applyEdit carries: each line hunk
// narrowed to the bytes that really differ, so the editor's undo and
// cursor positions move as little as possible.
func minimalEdits(oldText, newText string, enc workspace.Encoding) []map[string]any {
	edits := []map[string]any{}
	for _, hk := range diff.Hunks(oldText, newText) {
		start, end, repl := hk.Start, hk.End, hk.Text
		old := oldText[start:end]
		p := commonPrefix(old, repl)
		old, repl, start = old[p:], repl[p:], start+p
		q := commonSuffix(old, repl)
		end -= q
		repl = repl[:len(repl)-q]
		edits = append(edits, textEdit(oldText, start, end, repl, enc))
	}
	return edits
}

// commonPrefix and commonSuffix stop at rune boundaries, never inside a
// "\r\n" pair.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	for n > 0 && n < len(a) && (isContinuation(a[n]) || (a[n] == '\n' && a[n-1] == '\r')) {
		n--
	}
	return n
}

func commonSuffix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	for n > 0 && n < len(a) && (isContinuation(a[len(a)-n]) || (a[len(a)-n] == '\n' && a[len(a)-n-1] == '\r')) {
		n--
	}
	return n
}

func isContinuation(b byte) bool { return b&0xC0 == 0x80 }

// CanApplyToBuffers implements tools.Host.
// In ACP mode every buffer came from the client and can be written (through
// fs/write_text_file, else to the disk).
func (h *host) CanApplyToBuffers() bool { return h.s.opts.ACP || h.s.clientCaps().ApplyEdit }

// ApplyToBuffer implements tools.Host: it sends workspace/applyEdit pinned
// to the buffer's version (or a changes map while the overlay is still at
// that version), and returns once the overlay holds newText. The editor's
// "applied: true" alone is not trusted (protocol.md §6.3).
func (h *host) ApplyToBuffer(ctx context.Context, path string, version int32, newText string) error {
	if h.s.opts.ACP {
		return h.acpWriteDisk(path, newText)
	}
	c := h.s.clientCaps()
	if !c.ApplyEdit {
		return &tools.BufferEditError{Reason: "the editor does not support workspace/applyEdit"}
	}
	ov := h.s.ws.Overlay
	buf, ok := ov.Get(path)
	if !ok {
		return &tools.BufferEditError{Reason: "the file is no longer open in the editor"}
	}
	if buf.Version != version {
		return &tools.BufferEditError{Reason: fmt.Sprintf("the buffer moved to version %d before the change could be sent", buf.Version)}
	}
	if buf.Text == newText {
		return nil
	}
	uri := h.s.pathToURI(path)
	edits := minimalEdits(buf.Text, newText, c.Encoding)
	var edit map[string]any
	if c.DocumentChanges {
		edit = map[string]any{"documentChanges": []any{map[string]any{
			"textDocument": map[string]any{"uri": uri, "version": version},
			"edits":        edits,
		}}}
	} else {
		edit = map[string]any{"changes": map[string]any{uri: edits}}
	}
	changed := ov.Changed()
	var res struct {
		Applied       bool   `json:"applied"`
		FailureReason string `json:"failureReason"`
	}
	// No label: Neovim prints an edit's label as a message.
	if err := h.call(ctx, "workspace/applyEdit", map[string]any{"edit": edit}, &res); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &tools.BufferEditError{Reason: err.Error()}
	}
	if !res.Applied {
		reason := res.FailureReason
		if reason == "" {
			reason = "no reason given"
		}
		return &tools.BufferEditError{Reason: reason}
	}
	deadline := time.NewTimer(applyWait)
	defer deadline.Stop()
	for {
		if b, ok := ov.Get(path); ok && b.Text == newText {
			return nil
		}
		select {
		case <-changed:
			changed = ov.Changed()
		case <-deadline.C:
			return &tools.BufferEditError{Reason: "the buffer did not change within 2 s"}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Plain clients: window/showMessageRequest with Allow / Allow for session /
// Reject (protocol.md §7). A null answer is Reject.

func (h *host) ask(ctx context.Context, message string) (string, error) {
	var res *struct {
		Title string `json:"title"`
	}
	params := map[string]any{"type": 3, "message": message, "actions": []any{
		map[string]any{"title": "Allow"}, map[string]any{"title": "Allow for session"}, map[string]any{"title": "Reject"},
	}}
	if err := h.call(ctx, "window/showMessageRequest", params, &res); err != nil {
		return "", err
	}
	if res == nil {
		return "Reject", nil
	}
	return res.Title, nil
}

func (h *host) reviewPlain(ctx context.Context, r session.EditReview) (session.EditAnswer, error) {
	title, err := h.ask(ctx, h.s.plainReviewMessage(r))
	if err != nil {
		return session.EditAnswer{}, err
	}
	switch title {
	case "Allow":
		return session.EditAnswer{Outcome: "accepted"}, nil
	case "Allow for session":
		return session.EditAnswer{Outcome: "accepted", Always: true}, nil
	}
	return session.EditAnswer{Outcome: "rejected"}, nil
}

func lineCounts(oldText, newText string) (added, removed int) {
	for _, hk := range diff.Hunks(oldText, newText) {
		removed += hk.OldEnd - hk.OldStart
		added += hk.NewEnd - hk.NewStart
	}
	return added, removed
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// progress reports a long request with $/progress when the client gave a
// work-done token (protocol.md §5).
type progress struct {
	s     *Server
	token json.RawMessage
}

func (s *Server) beginProgress(token json.RawMessage, title string) *progress {
	if len(token) == 0 || string(token) == "null" {
		return &progress{}
	}
	p := &progress{s: s, token: token}
	p.send(map[string]any{"kind": "begin", "title": title, "cancellable": true})
	return p
}

func (p *progress) end(msg string) {
	p.send(map[string]any{"kind": "end", "message": msg})
}

func (p *progress) send(value map[string]any) {
	if p.s == nil {
		return
	}
	_ = p.s.conn.Notify(context.Background(), "$/progress", map[string]any{"token": p.token, "value": value})
}
