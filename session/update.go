package session

import (
	"encoding/json"

	"github.com/qwen-ls/qwen-ls/tools"
)

// Update is one ACP session update (protocol.md §5); its JSON is the
// payload's "update" object.
type Update struct {
	Kind string `json:"sessionUpdate"`
	// Content is a ContentBlock for message chunks, or []ToolContent for
	// tool call updates.
	Content any `json:"content,omitempty"`

	ToolCallID string          `json:"toolCallId,omitempty"`
	Title      string          `json:"title,omitempty"`
	ToolKind   string          `json:"kind,omitempty"`
	Status     string          `json:"status,omitempty"`
	Locations  []Location      `json:"locations,omitempty"`
	RawInput   json.RawMessage `json:"rawInput,omitempty"`
	// RawOutput is what the model was told of a finished call.
	RawOutput json.RawMessage `json:"rawOutput,omitempty"`

	// Entries are a plan's entries.
	Entries []PlanEntry `json:"entries,omitzero"`
	// Used and Size are a usage update's token counts.
	Used *int `json:"used,omitempty"`
	Size *int `json:"size,omitempty"`
	// CachedTokens is a usage update's count of prompt tokens the
	// provider read from its cache.
	CachedTokens *int `json:"cachedTokens,omitempty"`
	// CurrentModeID is a mode update's mode.
	CurrentModeID string `json:"currentModeId,omitempty"`
	// ModelID is a model update's model.
	ModelID string `json:"modelId,omitempty"`
	// ConfigOptions are an ACP config_option_update's options, filled in
	// by the ACP adapter.
	ConfigOptions any `json:"configOptions,omitempty"`
	// TokensBefore and TokensAfter are a context_compressed update's
	// request sizes; Summarised counts the messages replaced by the
	// summary and TruncatedOutputs the old tool outputs shortened.
	TokensBefore     *int `json:"tokensBefore,omitempty"`
	TokensAfter      *int `json:"tokensAfter,omitempty"`
	Summarised       int  `json:"summarizedMessages,omitempty"`
	TruncatedOutputs int  `json:"truncatedToolOutputs,omitempty"`

	// Meta is ACP's extension point; a finished tool call's carries how
	// it ended (docs/protocol.md "How a tool call ended").
	Meta *UpdateMeta `json:"_meta,omitempty"`
}

// UpdateMeta is an update's _meta object.
type UpdateMeta struct {
	Qwen QwenMeta `json:"qwen"`
}

// QwenMeta holds qwen-ls's own fields of _meta.
type QwenMeta struct {
	// Outcome is one of the Outcome constants.
	Outcome string `json:"outcome,omitempty"`
	// Review is how the person decided an edit hunk by hunk, when they
	// did (docs/protocol.md "How a tool call ended").
	Review *ReviewMeta `json:"review,omitempty"`
	// Undone: the call's turn was undone (qwen/revertTurn, /undo), and
	// with it the changes the call made.
	Undone bool `json:"undone,omitempty"`
}

// ReviewMeta is a review decided hunk by hunk: how many hunks were kept
// of how many, the line clients show ("2 of 3 changes kept"), and the
// decision and reason of each hunk.
type ReviewMeta struct {
	Kept    int                `json:"kept"`
	Total   int                `json:"total"`
	Summary string             `json:"summary"`
	Hunks   []tools.HunkReport `json:"hunks"`
}

// How a finished tool call ended: ACP's status has only completed and
// failed, and a person reads "I said no", "I stopped it" and "it broke"
// differently.
const (
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed"
	OutcomeRejected  = "rejected"
	OutcomeCancelled = "cancelled"
)

func outcomeMeta(outcome string) *UpdateMeta {
	return &UpdateMeta{Qwen: QwenMeta{Outcome: outcome}}
}

// Update kinds.
const (
	UpdateAgentMessage = "agent_message_chunk"
	UpdateAgentThought = "agent_thought_chunk"
	UpdateToolCall     = "tool_call"
	UpdateToolCallUpd  = "tool_call_update"
	UpdatePlan         = "plan"
	UpdateUsage        = "usage_update"
	UpdateMode         = "current_mode_update"
	// UpdateModel says the session's model changed (qwen/setModel).
	UpdateModel = "current_model_update"
	// UpdateConfigOptions is ACP's config_option_update.
	UpdateConfigOptions = "config_option_update"
	// UpdateCompressed says the history was compressed to fit the
	// model's context (docs/protocol.md).
	UpdateCompressed = "context_compressed"
)

// Tool call statuses on the wire.
const (
	StatusPending    = "pending"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
)

// ContentBlock is an ACP content block.
type ContentBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	URI  string `json:"uri,omitempty"`
	Name string `json:"name,omitempty"`
	// Resource is an embedded resource ({uri, text}).
	Resource *EmbeddedResource `json:"resource,omitempty"`
	// Data (base64) and MimeType are an image block's.
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

// EmbeddedResource is the resource of a "resource" content block.
type EmbeddedResource struct {
	URI  string `json:"uri"`
	Text string `json:"text"`
}

// ToolContent is one item of a tool call's content.
type ToolContent struct {
	Type    string        `json:"type"` // content, diff or terminal
	Content *ContentBlock `json:"content,omitempty"`
	// TerminalID names an editor terminal (type terminal).
	TerminalID string  `json:"terminalId,omitempty"`
	Path       string  `json:"path,omitempty"`
	OldText    *string `json:"oldText,omitempty"`
	NewText    *string `json:"newText,omitempty"`
}

// MarshalJSON writes oldText as null for a new file in a diff item.
func (c ToolContent) MarshalJSON() ([]byte, error) {
	if c.Type != "diff" {
		type plain ToolContent
		return json.Marshal(plain(c))
	}
	newText := ""
	if c.NewText != nil {
		newText = *c.NewText
	}
	return json.Marshal(struct {
		Type    string  `json:"type"`
		Path    string  `json:"path"`
		OldText *string `json:"oldText"`
		NewText string  `json:"newText"`
	}{c.Type, c.Path, c.OldText, newText})
}

// Location is a path and a 1-based line.
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// PlanEntry is one entry of a plan update.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

func textBlock(s string) *ContentBlock { return &ContentBlock{Type: "text", Text: s} }
