package tools

import (
	"context"
	"encoding/json"
	"sync"
)

// Kind classifies what a tool does (tools.md §1.1). It decides which calls
// may run in parallel and which ones plan mode blocks.
type Kind string

// The kinds of tools.md §1.1.
const (
	KindRead    Kind = "read"
	KindEdit    Kind = "edit"
	KindDelete  Kind = "delete"
	KindMove    Kind = "move"
	KindSearch  Kind = "search"
	KindExecute Kind = "execute"
	KindThink   Kind = "think"
	KindFetch   Kind = "fetch"
	KindOther   Kind = "other"
)

// ReadOnly reports whether calls of this kind change nothing, so that
// consecutive ones may run in parallel (tools.md §1.5, §5.3).
func (k Kind) ReadOnly() bool {
	return k == KindRead || k == KindSearch || k == KindFetch
}

// Where a registered tool came from (tools.md §1.1, as qwen/listTools reports
// it). MCP tools carry MCPSource(alias).
const (
	SourceBuiltin    = "builtin"
	SourceDiscovered = "discovered"
)

// MCPSource returns the source of the tools of the MCP server alias.
func MCPSource(alias string) string { return "mcp:" + alias }

// Location is a place a call touches: an absolute path and, when known, a
// 1-based line (0 means none).
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// Host is the editor side of a call (architecture.md §1): the rpc package
// implements it through the session. A nil Host means there is no editor
// (headless runs and unit tests): open buffers cannot then be changed.
type Host interface {
	// ApplyToBuffer changes the open buffer of path from version to
	// newText through the editor (workspace/applyEdit), and returns once
	// the overlay holds newText. A *BufferEditError says the editor
	// refused or the change did not show up in time.
	ApplyToBuffer(ctx context.Context, path string, version int32, newText string) error
	// CanApplyToBuffers reports whether the editor supports
	// workspace/applyEdit at all.
	CanApplyToBuffers() bool
}

// BufferEditError is returned by Host.ApplyToBuffer when the editor did not
// apply a change; Reason is its failureReason, "the buffer did not change
// within 2 s", or "no reason given".
type BufferEditError struct{ Reason string }

func (e *BufferEditError) Error() string { return "the editor did not apply the change: " + e.Reason }

// Model is what task and web_fetch need from the session's model
// (architecture.md §3). The session package implements it; tools must not
// import session. A nil Model means no model is configured.
type Model interface {
	// Complete sends one request without tools, a single attempt, and
	// returns the reply text.
	Complete(ctx context.Context, system, user string) (string, error)
	// RunSubagent runs a sub-session (task, tools.md §3.13) until the
	// model answers without tool calls or req.MaxTurns requests were
	// made. onUpdate gets the run's progress after every change, one call
	// at a time. A model failure after retries is an error; so is the
	// cancellation of ctx, which stops the sub-session.
	RunSubagent(ctx context.Context, req SubagentRequest, onUpdate func(SubagentRun)) (SubagentResult, error)
}

// EditDecision is the user's answer to an edit review (tools.md §2.11), set
// by the scheduler on the Call before Execute. A nil decision means the
// change needed no review (auto-edit, yolo, an allow rule) and is applied
// as proposed. Rejections never reach Execute: the scheduler answers them.
type EditDecision struct {
	// FinalText is the text the user left: nil (or equal to the proposed
	// text) means "as proposed".
	FinalText *string
	// Kept says, hunk by hunk, which hunks of the proposal the person
	// kept, when they decided them one by one (FinalText is then the old
	// text with those hunks applied); nil when they did not.
	Kept []bool
	// Reasons are the person's reasons for rejecting hunks, by hunk
	// index.
	Reasons map[int]string
	// Feedback is the person's note on the whole proposal.
	Feedback string
}

// Call is the per-call data of one tool call. It travels as an explicit
// argument, never in a context value.
type Call struct {
	// ID is the call id, unique within the session (tools.md §5.1).
	ID string
	// SessionID names the session that made the call.
	SessionID string
	// Name is the name as the model called it, which may be an alias.
	Name string

	Host  Host
	Model Model
	// Ledger is the session's (or sub-session's) record of reads, for
	// prior-read enforcement (tools.md §2.9). Nil disables the checks'
	// record keeping but not the checks: a nil ledger knows no reads.
	Ledger *Ledger
	// Confirmation is what ShouldConfirm returned for this call, kept so
	// that Execute applies exactly the proposal the user saw.
	Confirmation *Confirmation
	// Decision is the user's answer to an edit review.
	Decision *EditDecision
	// Mode is the session's approval mode after the confirmation
	// ("default", "auto-edit", "yolo" or "plan"), set by the scheduler
	// before Execute. exit_plan_mode tells the model which mode the
	// user's answer switched to (tools.md §3.14).
	Mode string
	// Approval says why the call runs, set by the scheduler before
	// Execute: the shell tool chooses its sandbox from it.
	Approval Approval
	// AskOutsideSandbox, set by the scheduler when the person can be
	// asked, asks whether a command the sandbox stopped may run once
	// outside it; reason says what was blocked.
	AskOutsideSandbox func(ctx context.Context, reason string) (bool, error)
}

// Approval says why a call runs.
type Approval string

const (
	// approvalUnknown: the caller did not say (direct calls in tests and
	// embedders); the shell treats it as ApprovalRule.
	approvalUnknown Approval = ""
	// ApprovalNotNeeded: the tool asked for no confirmation (for the
	// shell: every sub-command was judged read-only).
	ApprovalNotNeeded Approval = "not-needed"
	// ApprovalRule: an allow rule or the approval mode (auto-edit, yolo)
	// let the call run without a question.
	ApprovalRule Approval = "rule"
	// ApprovalUser: the person said yes to this call.
	ApprovalUser Approval = "user"
)

// Output is one live update of a running call. Each update replaces the
// previous one (tools.md §5.6), so Text holds the whole output so far. A
// tool with a structured live view (task's SubagentRun) sets Display instead.
type Output struct {
	Text    string
	Display Display
}

// Tool is the contract of tools.md §1.1. Validate, Describe, Locations and
// ShouldConfirm change nothing outside the process; only Execute acts.
//
// A tool embeds Base (and is used through a pointer) to get the static
// methods and the defaults; it then implements Describe and Execute, and
// overrides the rest where it has something to say.
type Tool interface {
	// Name is the unique API name the model calls: [A-Za-z0-9_.-], at most
	// 63 characters.
	Name() string
	// DisplayName is the short human name (ReadFile).
	DisplayName() string
	// Description is the model-facing text.
	Description() string
	// Schema is the JSON Schema object of the arguments, sent to the model
	// as is.
	Schema() json.RawMessage
	Kind() Kind
	// Aliases are other names the model may call the tool by; only Name is
	// declared.
	Aliases() []string
	// ParameterAliases maps an argument alias to its canonical property
	// (file_path → absolute_path), applied before validation.
	ParameterAliases() map[string]string
	// StreamsOutput reports whether Execute calls onOutput with live output.
	StreamsOutput() bool
	// Source is builtin, discovered or mcp:<alias>. The registry, which
	// knows where it got the tool from, is authoritative.
	Source() string
	// SkipSchemaValidation reports whether PrepareArgs leaves out the JSON
	// Schema step, because the tool's own Validate gives the messages
	// (todo_write, task, exit_plan_mode).
	SkipSchemaValidation() bool

	// Validate checks arguments that passed PrepareArgs' schema step. A
	// returned error without a Type is invalid_tool_params.
	Validate(params map[string]any) *ToolError
	// Describe says in one line what the call will do; only called with
	// valid params.
	Describe(params map[string]any) string
	// Locations lists the paths the call touches.
	Locations(params map[string]any) []Location
	// ShouldConfirm returns nothing, the details of the confirmation the
	// call needs, or an error that ends the call before the user sees it.
	ShouldConfirm(ctx context.Context, call *Call, params map[string]any) (*Confirmation, *ToolError)
	// Execute runs the call. Failures the model should read are
	// Result.Error; a Go error means cancellation or a lost editor, which
	// end the turn. onOutput is never nil when called through Guard.
	Execute(ctx context.Context, call *Call, params map[string]any, onOutput func(Output)) (Result, error)
}

// Spec is the static description of a tool, kept by Base.
type Spec struct {
	Name             string
	DisplayName      string
	Description      string
	Schema           json.RawMessage
	Kind             Kind
	Aliases          []string
	ParameterAliases map[string]string
	StreamsOutput    bool
	// Source defaults to builtin.
	Source               string
	SkipSchemaValidation bool
}

// Base gives a tool its static methods from Spec and the default operations:
// no validation of its own, no locations, no confirmation. It also caches
// the compiled argument schema, so a Base must not be copied after first use:
// build tools as pointers (&ReadFile{Base: tools.Base{Spec: ...}}).
type Base struct {
	Spec Spec

	schemaOnce sync.Once
	schema     *ArgsSchema
}

func (b *Base) Name() string                        { return b.Spec.Name }
func (b *Base) DisplayName() string                 { return b.Spec.DisplayName }
func (b *Base) Description() string                 { return b.Spec.Description }
func (b *Base) Schema() json.RawMessage             { return b.Spec.Schema }
func (b *Base) Kind() Kind                          { return b.Spec.Kind }
func (b *Base) Aliases() []string                   { return b.Spec.Aliases }
func (b *Base) ParameterAliases() map[string]string { return b.Spec.ParameterAliases }
func (b *Base) StreamsOutput() bool                 { return b.Spec.StreamsOutput }
func (b *Base) SkipSchemaValidation() bool          { return b.Spec.SkipSchemaValidation }

// Source returns Spec.Source, or builtin when that is empty.
func (b *Base) Source() string {
	if b.Spec.Source == "" {
		return SourceBuiltin
	}
	return b.Spec.Source
}

// Validate accepts every argument set that passed the schema.
func (b *Base) Validate(map[string]any) *ToolError { return nil }

// Locations is empty by default.
func (b *Base) Locations(map[string]any) []Location { return nil }

// ShouldConfirm asks for nothing by default.
func (b *Base) ShouldConfirm(context.Context, *Call, map[string]any) (*Confirmation, *ToolError) {
	return nil, nil
}

// ArgsSchema returns the compiled Spec.Schema, compiling it once; nil when
// it does not compile (MCP tools may send such schemas, and then the schema
// step is skipped). PrepareArgs uses it instead of compiling on every call.
func (b *Base) ArgsSchema() *ArgsSchema {
	b.schemaOnce.Do(func() {
		b.schema, _ = compileArgsSchema(b.Spec.Schema)
	})
	return b.schema
}
