package session

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/qwen-ls/qwen-ls/tools"
)

// Limits on what one model response may ask for (docs/protocol.md, "Limits
// on the model"). They keep a broken or hostile model from running
// unbounded work or holding unbounded memory; calls past them are answered
// to the model with an error and never run.
const (
	// MaxCallsPerResponse is how many tool calls of one response run.
	MaxCallsPerResponse = 128
	// MaxArgumentBytes bounds one call's arguments.
	MaxArgumentBytes = 8 << 20
	// MaxToolNameBytes bounds a tool name; registered names are far
	// shorter.
	MaxToolNameBytes = 256
	// LoopLimit is how many times in a row a turn runs the very same
	// call (name and arguments) before the loop guard stops the turn.
	LoopLimit = 5
	// maxResponseBytes bounds the text, reasoning and arguments of one
	// streamed response together.
	maxResponseBytes = 64 << 20
)

// loopGuard follows the calls of one turn.
type loopGuard struct {
	last   [32]byte
	repeat int
}

// screenCalls decides which calls of a response are refused before they
// reach the scheduler: an invalid tool name, oversized arguments, calls
// past MaxCallsPerResponse, and a call repeated LoopLimit times in a row
// (then stop is true and the turn ends after this batch). It also returns
// the calls as they go into the history: oversized arguments are replaced
// by "{}" so they are not sent back to the model on every request.
func (g *loopGuard) screenCalls(calls []ToolCall) (kept []ToolCall, refused map[int]*tools.ToolError, stop bool) {
	kept = calls
	copied := false
	refuse := func(i int, terr *tools.ToolError) {
		if refused == nil {
			refused = map[int]*tools.ToolError{}
		}
		refused[i] = terr
	}
	for i, c := range calls {
		switch {
		case i >= MaxCallsPerResponse:
			refuse(i, tools.NewError(tools.ErrorExecutionDenied, fmt.Sprintf(
				"This call was not run: one response may make at most %d tool calls, and this one made %d. Make the remaining calls in your next response, fewer at a time.",
				MaxCallsPerResponse, len(calls))))
			continue
		case !validToolName(c.Name):
			refuse(i, tools.NewError(tools.ErrorToolNotRegistered, fmt.Sprintf(
				"The tool name %s is not valid: tool names have no control characters and are at most %d bytes. Call tools by their exact registered names.",
				quoteName(c.Name), MaxToolNameBytes)))
			continue
		case c.DroppedBytes > 0 || len(c.Arguments) > MaxArgumentBytes:
			refuse(i, tools.NewError(tools.ErrorInvalidToolParams, fmt.Sprintf(
				"This call was not run: its arguments are %d bytes, over the limit of %d MiB for one call. Write large content in smaller pieces: create the file with a short skeleton, then add sections with edit.",
				max(c.DroppedBytes, len(c.Arguments)), MaxArgumentBytes>>20)))
			if !copied {
				kept, copied = append([]ToolCall(nil), calls...), true
			}
			kept[i].Arguments, kept[i].DroppedBytes = "{}", 0
			continue
		}
		// Hashed in place: a concatenation would copy the arguments twice.
		sig := tools.HashStrings(c.Name, "\x00", c.Arguments)
		if sig == g.last {
			g.repeat++
		} else {
			g.last, g.repeat = sig, 1
		}
		if g.repeat >= LoopLimit {
			stop = true
			refuse(i, tools.NewError(tools.ErrorExecutionDenied, fmt.Sprintf(
				"This call was not run: it is the same %s call, with the same arguments, for the %d. time in a row. The turn was stopped to break the loop; the user can ask again.",
				c.Name, g.repeat)))
		}
	}
	return kept, refused, stop
}

// validToolName accepts names that can be shown as they are: valid UTF-8,
// no control characters, at most MaxToolNameBytes.
func validToolName(name string) bool {
	if len(name) > MaxToolNameBytes || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return false
		}
	}
	return true
}

// quoteName is a tool name as it may be shown in a message, a log or the
// editor: a valid name quoted, anything else escaped (Go syntax) and cut
// to 64 bytes first.
func quoteName(name string) string {
	if len(name) > 64 {
		return strconv.Quote(name[:runeStartAtOrBefore(name, 64)]) + "…"
	}
	return strconv.Quote(name)
}
