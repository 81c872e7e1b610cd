package session

import (
	"context"
	"net/url"
	"slices"
	"strings"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/shellsafe"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// Permission option ids (protocol.md §6.1).
const (
	OptionProceedOnce   = "proceed_once"
	OptionProceedAlways = "proceed_always"
	OptionAlwaysProject = "proceed_always_project"
	OptionAlwaysUser    = "proceed_always_user"
	OptionCancel        = "cancel"
	kindAllowOnce       = "allow_once"
	kindAllowAlways     = "allow_always"
	kindRejectOnce      = "reject_once"
	outcomeAccepted     = "accepted"
	outcomeRejected     = "rejected"
)

// rulesOf are the permission rules a confirmation suggests: what an
// "always" answer remembers.
func rulesOf(c *tools.Confirmation) []string {
	switch d := c.Details.(type) {
	case *tools.ExecConfirmation:
		return d.PermissionRules
	case *tools.MCPConfirmation:
		return d.PermissionRules
	case *tools.InfoConfirmation:
		if len(d.PermissionRules) > 0 {
			return d.PermissionRules
		}
		var out []string
		for _, u := range d.URLs {
			if pu, err := url.Parse(u); err == nil {
				out = append(out, "WebFetch("+pu.Hostname()+")")
			}
		}
		return out
	}
	return nil
}

func (s *Session) remember(rules []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.allowed == nil {
		s.allowed = map[string]bool{}
	}
	for _, r := range rules {
		s.allowed[r] = true
	}
}

// ask puts a confirmation to the user (tools.md §6.5) and records the
// answer on the call.
func (s *Session) ask(ctx context.Context, r *callRun, conf *tools.Confirmation) {
	host := s.host()
	if edit, ok := conf.Details.(*tools.EditConfirmation); ok {
		ans, err := host.ReviewEdit(ctx, s.id, EditReview{ToolCallID: r.tc.ID, Title: conf.Title, Path: edit.FilePath,
			Version: edit.Version, IsNewFile: edit.IsNewFile, OldText: edit.OldText, NewText: edit.NewText})
		if ctx.Err() != nil {
			r.cancel(reasonBeforeRun)
			return
		}
		if err != nil {
			r.fail(tools.NewError(tools.ErrorExecutionDenied, "The edit review failed: "+err.Error()))
			return
		}
		if ans.Outcome == outcomeAccepted && ans.FinalText != nil && *ans.FinalText == edit.OldText {
			// Accepting with the old text keeps nothing: a rejection.
			ans = EditAnswer{Outcome: outcomeRejected, Feedback: ans.Feedback, Kept: ans.Kept, Reasons: ans.Reasons}
		}
		if ans.Outcome != outcomeAccepted {
			r.state, r.userRejected = stateCancelled, true
			if ans.Outcome != outcomeRejected {
				// Dismissed without deciding: no feedback to tell.
				ans.Feedback, ans.Reasons = "", nil
			}
			var report *tools.ReviewReport
			if len(ans.Kept) > 0 || len(ans.Reasons) > 0 {
				report = tools.ReviewReportOf(edit.OldText, edit.NewText, ans.Kept, ans.Reasons)
			}
			r.reason = tools.RejectionReason(edit.FilePath, ans.Feedback, report)
			r.hasFeedback = strings.TrimSpace(ans.Feedback) != "" || report != nil && report.HasReasons()
			if report != nil && len(report.Hunks) > 1 {
				r.review = report
			}
			return
		}
		if ans.Always {
			_ = s.SetMode(ModeAutoEdit)
		}
		r.call.Decision = &tools.EditDecision{FinalText: ans.FinalText, Kept: ans.Kept, Reasons: ans.Reasons, Feedback: ans.Feedback}
		r.approved = true
		return
	}
	if _, ok := conf.Details.(*tools.PlanConfirmation); ok {
		s.askPlan(ctx, r, conf)
		return
	}
	always := alwaysNone
	if !r.forced {
		always = s.alwaysHonoured(r, conf)
	}
	req := PermissionRequest{ToolCallID: r.tc.ID, Title: conf.Title, Kind: kindOf(r.tool), RawInput: rawInput(r.tc.Arguments),
		Locations: locations(r.tool, r.params), Options: optionsFor(r.tool, conf, always, s.mgr.opts.Env.Settings().Trust().Trusted), Confirmation: conf}
	if text := promptText(conf); text != "" {
		req.Content = []ToolContent{{Type: "content", Content: textBlock(text)}}
	}
	ans, ok := s.requestPermission(ctx, r, req)
	if !ok {
		return
	}
	switch {
	case ans.Cancelled || ans.OptionID == OptionCancel || ans.OptionID == "" || !offered(req.Options, ans.OptionID):
		// An option we did not offer is never an allow: an "always" left
		// out because its rule could not be honoured records nothing.
		r.state, r.reason, r.userRejected = stateCancelled, reasonRejected, true
	case ans.OptionID == OptionProceedAlways || ans.OptionID == OptionAlwaysProject || ans.OptionID == OptionAlwaysUser:
		s.remember(rulesOf(conf))
		if ans.OptionID != OptionProceedAlways {
			if err := s.persistRules(ans.OptionID, rulesOf(conf)); err != nil {
				host.Update(s.id, Update{Kind: UpdateAgentThought, Content: textBlock("[Could not save the permission rule: " + err.Error() + "]\n")})
			}
		}
		r.approved = true
	case ans.OptionID == OptionProceedOnce:
		r.approved = true
	default:
		// An option we did not offer is never an allow.
		r.state, r.reason, r.userRejected = stateCancelled, reasonRejected, true
	}
}

// persistRules writes "always" rules to the project or user settings.
func (s *Session) persistRules(option string, rules []string) error {
	scope := workspace.ScopeProject
	if option == OptionAlwaysUser {
		scope = workspace.ScopeUser
	}
	return s.mgr.opts.Env.Settings().AppendAllowRules(scope, rules)
}

// alwaysScope says which "always" options a prompt may offer.
type alwaysScope int

const (
	// alwaysNone: no "always" option (an ask rule forced the prompt, or
	// the rules an answer would record would not spare the next one).
	alwaysNone alwaysScope = iota
	// alwaysSession: "Allow … for this session" only.
	alwaysSession
	// alwaysPersist: the session option, and the settings-file ones.
	alwaysPersist
)

// alwaysHonoured says which "always" options the call's prompt may offer:
// only those whose recorded rules really suppress the same prompt next
// time (tools.md §6.5). A shell call is checked by judging it again with
// the rules added: a rule never covers a command substitution, nor, with
// no sandbox, a command made only of read-only programs (they always ask
// there), nor a redirection that no exact rule can name (a here-document,
// a group's redirection, a target known only when it runs) or a command
// run outside the primary root, where an exact rule's file is another. The
// settings-file options also need rules without "$": the settings files
// expand $VAR when they are read, so such a rule would come back as
// another.
func (s *Session) alwaysHonoured(r *callRun, conf *tools.Confirmation) alwaysScope {
	rules := rulesOf(conf)
	if sh := shellOf(s.mgr.opts.Env, r.tool, r.params); sh != nil {
		added := parseRules(rules)
		if conf.Unconfined || len(rules) == 0 || len(added) != len(rules) {
			return alwaysNone
		}
		rs := s.rules()
		rs.allow = append(rs.allow, added...)
		if d := s.decideWith(rs, r.tool, r.params); !d.allowed || d.ask || d.deniedBy != "" {
			return alwaysNone
		}
	}
	for _, rule := range rules {
		if strings.Contains(rule, "$") {
			return alwaysSession
		}
	}
	return alwaysPersist
}

func offered(opts []PermissionOption, id string) bool {
	for _, o := range opts {
		if o.OptionID == id {
			return true
		}
	}
	return false
}

// optionsFor are the options of a permission prompt; always says which
// "always" options it has. "Always allow in this project" is left out
// unless the folder is trusted: the rule would go to the workspace
// settings, whose allow rules an untrusted folder ignores. When an exact
// shell rule is among the rules (shellsafe.ExactRule), the session option
// names the rules, as the others do: it allows that one command, not its
// program.
func optionsFor(t tools.Tool, c *tools.Confirmation, always alwaysScope, projectTrusted bool) []PermissionOption {
	if always == alwaysNone {
		return []PermissionOption{{OptionProceedOnce, "Allow", kindAllowOnce}, {OptionCancel, "Reject", kindRejectOnce}}
	}
	rules := strings.Join(rulesOf(c), ", ")
	what := "Allow " + t.DisplayName() + " for this session"
	switch d := c.Details.(type) {
	case *tools.ExecConfirmation:
		what = "Allow " + d.RootCommand + " for this session"
		if hasExactRule(d.PermissionRules) {
			what = "Allow for this session: " + rules
		}
	case *tools.InfoConfirmation:
		if len(d.URLs) > 0 {
			if u, err := url.Parse(d.URLs[0]); err == nil {
				what = "Allow " + u.Hostname() + " for this session"
			}
		}
	}
	opts := []PermissionOption{
		{OptionProceedOnce, "Allow", kindAllowOnce},
		{OptionProceedAlways, what, kindAllowAlways},
	}
	if always == alwaysPersist && projectTrusted {
		opts = append(opts, PermissionOption{OptionAlwaysProject, "Always allow in this project: " + rules, kindAllowAlways})
	}
	if always == alwaysPersist {
		opts = append(opts, PermissionOption{OptionAlwaysUser, "Always allow for this user: " + rules, kindAllowAlways})
	}
	return append(opts, PermissionOption{OptionCancel, "Reject", kindRejectOnce})
}

// hasExactRule reports an exact shell rule among rules.
func hasExactRule(rules []string) bool {
	for _, raw := range rules {
		if r, ok := parseRule(raw); ok && r.hasSpec && slices.Contains(r.names, "run_shell_command") && shellsafe.ExactRule(r.spec) {
			return true
		}
	}
	return false
}

func promptText(c *tools.Confirmation) string {
	switch d := c.Details.(type) {
	case *tools.ExecConfirmation:
		return d.Command
	case *tools.InfoConfirmation:
		return d.Prompt
	case *tools.PlanConfirmation:
		return d.Plan
	case *tools.MCPConfirmation:
		return d.ToolDisplayName
	}
	return ""
}

// requestPermission puts req to the user. ok is false when the call ends
// instead, already recorded on r: cancelled while the question was open,
// or failed because the request did.
func (s *Session) requestPermission(ctx context.Context, r *callRun, req PermissionRequest) (ans PermissionAnswer, ok bool) {
	ans, err := s.host().RequestPermission(ctx, s.id, req)
	if ctx.Err() != nil {
		r.cancel(reasonBeforeRun)
		return ans, false
	}
	if err != nil {
		r.fail(tools.NewError(tools.ErrorExecutionDenied, "The permission request failed: "+err.Error()))
		return ans, false
	}
	return ans, true
}

// askPlan asks about an exit_plan_mode plan with the three options of
// tools.md §3.14 and switches the approval mode on the answer.
func (s *Session) askPlan(ctx context.Context, r *callRun, conf *tools.Confirmation) {
	plan := conf.Details.(*tools.PlanConfirmation).Plan
	req := PermissionRequest{ToolCallID: r.tc.ID, Title: conf.Title, Kind: kindOf(r.tool), RawInput: rawInput(r.tc.Arguments),
		Content: []ToolContent{{Type: "content", Content: textBlock(plan)}}, Confirmation: conf,
		Options: []PermissionOption{
			{OptionProceedAlways, "Yes, and auto-accept edits", kindAllowAlways},
			{OptionProceedOnce, "Yes, and manually approve edits", kindAllowOnce},
			{OptionCancel, "No, keep planning", kindRejectOnce},
		}}
	ans, ok := s.requestPermission(ctx, r, req)
	if !ok {
		return
	}
	switch {
	case !ans.Cancelled && ans.OptionID == OptionProceedAlways:
		_ = s.SetMode(ModeAutoEdit)
		r.approved = true
	case !ans.Cancelled && ans.OptionID == OptionProceedOnce:
		_ = s.SetMode(ModeDefault)
		r.approved = true
	default:
		r.state, r.reason, r.userRejected = stateCancelled, tools.PlanRejectedReason, true
		r.result.Display = tools.PlanRejectedDisplay(plan)
	}
}
