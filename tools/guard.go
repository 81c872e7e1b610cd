package tools

import (
	"context"
	"fmt"
)

// Guard runs tool.Execute so that a panic inside the tool becomes an
// unhandled_exception result ("The tool failed unexpectedly: <text>") and the
// turn goes on (tools.md §1.1). A nil onOutput is replaced by one that drops
// the output. A Go error from Execute is passed through: it means the turn
// was cancelled or the editor was lost.
func Guard(ctx context.Context, tool Tool, call *Call, params map[string]any, onOutput func(Output)) (res Result, err error) {
	if onOutput == nil {
		onOutput = func(Output) {}
	}
	defer func() {
		if r := recover(); r != nil {
			res, err = Result{Error: unexpected(panicText(r))}, nil
		}
	}()
	return tool.Execute(ctx, call, params, onOutput)
}

// GuardConfirm runs tool.ShouldConfirm with the same panic recovery as Guard.
func GuardConfirm(ctx context.Context, tool Tool, call *Call, params map[string]any) (conf *Confirmation, terr *ToolError) {
	defer func() {
		if r := recover(); r != nil {
			conf, terr = nil, unexpected(panicText(r))
		}
	}()
	return tool.ShouldConfirm(ctx, call, params)
}

// GuardDescribe runs tool.Describe, falling back to the display name when it
// panics or says nothing, so that a call always has a title.
func GuardDescribe(tool Tool, params map[string]any) (title string) {
	defer func() {
		if r := recover(); r != nil {
			title = tool.DisplayName()
		}
	}()
	if title = tool.Describe(params); title == "" {
		title = tool.DisplayName()
	}
	return title
}

// panicText is the <text> of an unhandled_exception message.
func panicText(r any) string {
	if err, ok := r.(error); ok {
		return err.Error()
	}
	return fmt.Sprint(r)
}
