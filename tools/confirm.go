package tools

import (
	"encoding/json"
	"fmt"
)

// ConfirmationType names the kind of confirmation a call asks for
// (tools.md §1.3).
type ConfirmationType string

// The confirmation types of tools.md §1.3.
const (
	ConfirmEdit ConfirmationType = "edit"
	confirmExec ConfirmationType = "exec"
	confirmMCP  ConfirmationType = "mcp"
	ConfirmInfo ConfirmationType = "info"
	confirmPlan ConfirmationType = "plan"
)

// Confirmation is what ShouldConfirm returns when a call needs the user:
// a title and the details of one of the five types. Its JSON is flat:
// {type, title, <the details' fields>}.
type Confirmation struct {
	Title   string
	Details ConfirmationDetails
	// Unconfined marks a shell command that would run unasked if a
	// sandbox could confine it, and there is none: its read-only
	// sub-commands do not count as covered by the allow rules.
	Unconfined bool
}

// Type returns the type of the details, or "" when there are none.
func (c *Confirmation) Type() ConfirmationType {
	if c == nil || c.Details == nil {
		return ""
	}
	return c.Details.ConfirmationType()
}

// ConfirmationDetails is one of *EditConfirmation, *ExecConfirmation,
// *MCPConfirmation, *InfoConfirmation or *PlanConfirmation.
type ConfirmationDetails interface {
	ConfirmationType() ConfirmationType
}

// EditConfirmation asks the user to review a change to one file (edit,
// write_file, save_memory); it goes through the editor review of §2.11.
type EditConfirmation struct {
	FilePath string `json:"filePath"`
	// OldText is the whole current text, "" for a new file.
	OldText string `json:"oldText"`
	// NewText is the whole proposed text.
	NewText   string `json:"newText"`
	FileDiff  string `json:"fileDiff"`
	IsNewFile bool   `json:"isNewFile"`
	// Version is the buffer version OldText was read at, nil when it
	// came from the disk (qwen/proposeEdit's version, protocol.md §6.2).
	Version *int32 `json:"version,omitempty"`
}

// ExecConfirmation asks to run a shell command.
type ExecConfirmation struct {
	Command string `json:"command"`
	// Commands are the sub-commands that need approval.
	Commands []string `json:"commands"`
	// RootCommand is the comma-joined roots that need approval.
	RootCommand string `json:"rootCommand"`
	// PermissionRules are the suggested rules, e.g. Bash(npm run *).
	PermissionRules []string `json:"permissionRules"`
}

// MCPConfirmation asks to call a tool of an MCP server.
type MCPConfirmation struct {
	ServerName string `json:"serverName"`
	// ToolName is the server-side name.
	ToolName        string   `json:"toolName"`
	ToolDisplayName string   `json:"toolDisplayName"`
	PermissionRules []string `json:"permissionRules"`
}

// InfoConfirmation asks a plain question (web_fetch, web_search, prompts
// forced by ask rules).
type InfoConfirmation struct {
	Prompt          string   `json:"prompt"`
	URLs            []string `json:"urls,omitempty"`
	PermissionRules []string `json:"permissionRules,omitempty"`
}

// PlanConfirmation asks the user to approve a plan (exit_plan_mode).
type PlanConfirmation struct {
	Plan string `json:"plan"`
}

func (*EditConfirmation) ConfirmationType() ConfirmationType { return ConfirmEdit }
func (*ExecConfirmation) ConfirmationType() ConfirmationType { return confirmExec }
func (*MCPConfirmation) ConfirmationType() ConfirmationType  { return confirmMCP }
func (*InfoConfirmation) ConfirmationType() ConfirmationType { return ConfirmInfo }
func (*PlanConfirmation) ConfirmationType() ConfirmationType { return confirmPlan }

// MarshalJSON encodes {type, title, ...details}.
func (c *Confirmation) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(struct {
		Type  ConfirmationType `json:"type"`
		Title string           `json:"title"`
	}{c.Type(), c.Title})
	if err != nil {
		return nil, fmt.Errorf("encode confirmation: %w", err)
	}
	if c.Details == nil {
		return head, nil
	}
	body, err := json.Marshal(c.Details)
	if err != nil {
		return nil, fmt.Errorf("encode confirmation details: %w", err)
	}
	if len(body) <= 2 { // "{}": nothing to add
		return head, nil
	}
	// Splice the two objects: head without its "}", a comma, body without its "{".
	out := make([]byte, 0, len(head)+len(body))
	out = append(out, head[:len(head)-1]...)
	out = append(out, ',')
	out = append(out, body[1:]...)
	return out, nil
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (c *Confirmation) UnmarshalJSON(data []byte) error {
	var head struct {
		Type  ConfirmationType `json:"type"`
		Title string           `json:"title"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("decode confirmation: %w", err)
	}
	var d ConfirmationDetails
	switch head.Type {
	case ConfirmEdit:
		d = &EditConfirmation{}
	case confirmExec:
		d = &ExecConfirmation{}
	case confirmMCP:
		d = &MCPConfirmation{}
	case ConfirmInfo:
		d = &InfoConfirmation{}
	case confirmPlan:
		d = &PlanConfirmation{}
	default:
		return fmt.Errorf("decode confirmation: unknown type %q", head.Type)
	}
	if err := json.Unmarshal(data, d); err != nil {
		return fmt.Errorf("decode confirmation details: %w", err)
	}
	*c = Confirmation{Title: head.Title, Details: d}
	return nil
}
