package session

import (
	"context"
	"encoding/json"

	"github.com/qwen-ls/qwen-ls/tools"
)

// Host is the editor, as the session sees it. The rpc package implements
// it for each connection.
type Host interface {
	tools.Host
	// Update sends a session update (qwen/sessionUpdate). It must not
	// block on the editor's answer.
	Update(sessionID string, u Update)
	// CanAsk reports whether the editor can ask the user anything; when
	// it cannot, calls that need a confirmation are denied.
	CanAsk() bool
	// RequestPermission asks the user about a call that is not an edit.
	RequestPermission(ctx context.Context, sessionID string, req PermissionRequest) (PermissionAnswer, error)
	// ReviewEdit shows an edit proposal for review.
	ReviewEdit(ctx context.Context, sessionID string, req EditReview) (EditAnswer, error)
}

// PermissionRequest is a qwen/requestPermission request.
type PermissionRequest struct {
	ToolCallID string
	Title      string
	Kind       string
	Content    []ToolContent
	Locations  []Location
	RawInput   json.RawMessage
	Options    []PermissionOption
	// Confirmation is the tool's details, for clients that show more.
	Confirmation *tools.Confirmation
}

// PermissionOption is one choice offered to the user.
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// PermissionAnswer is the user's choice; Cancelled means dismissed.
type PermissionAnswer struct {
	OptionID  string
	Cancelled bool
}

// EditReview is a qwen/proposeEdit request: whole old and new texts.
type EditReview struct {
	ToolCallID string
	Title      string
	Path       string
	// Version is the buffer version the proposal was computed on, or nil
	// for a file on disk.
	Version   *int32
	IsNewFile bool
	OldText   string
	NewText   string
}

// EditAnswer is the user's decision on a proposal.
type EditAnswer struct {
	// Outcome is accepted, rejected or cancelled.
	Outcome   string
	FinalText *string
	Feedback  string
	Always    bool
	// Kept says which hunks the person kept, one entry per hunk of the
	// proposal, when they decided hunk by hunk (keptHunks); nil when not.
	Kept []bool
	// Reasons are the person's reasons for rejecting hunks, by hunk index
	// (hunkFeedback).
	Reasons map[int]string
}

// ToolSet is the registry's snapshot for one model request.
type ToolSet interface {
	// Lookup finds a tool by name or alias.
	Lookup(name string) (tools.Tool, *tools.ToolError)
	// Declarations are the function declarations, in registry order.
	Declarations() []ToolDecl
	// Names lists the registered tools.
	Names() []string
}

// Toolbox gives the current tool set; the registry implements it through
// an adapter in cmd/qwen-ls, since session does not import registry.
type Toolbox interface {
	Tools() ToolSet
}

// nopHost is used when there is no editor: updates go nowhere and
// nothing can be asked.
type nopHost struct{}

func (nopHost) Update(string, Update) {}
func (nopHost) CanAsk() bool          { return false }
func (nopHost) RequestPermission(context.Context, string, PermissionRequest) (PermissionAnswer, error) {
	return PermissionAnswer{Cancelled: true}, nil
}
func (nopHost) ReviewEdit(context.Context, string, EditReview) (EditAnswer, error) {
	return EditAnswer{Outcome: "cancelled"}, nil
}
func (nopHost) ApplyToBuffer(context.Context, string, int32, string) error {
	return &tools.BufferEditError{Reason: "there is no editor"}
}
func (nopHost) CanApplyToBuffers() bool { return false }
