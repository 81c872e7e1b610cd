package tools

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"unicode/utf8"
)

//go:embed readfile.md
var readFileDescription string

const readFileSchema = `{
  "type": "object",
  "properties": {
    "absolute_path": {
      "type": "string",
      "description": "The absolute path of the file to read, starting with /. Relative paths are not accepted."
    },
    "offset": {
      "type": "integer",
      "description": "The 0-based number of the first line to return. Use it with limit to page through a long file."
    },
    "limit": {
      "type": "integer",
      "description": "How many lines to return, starting at offset. Defaults to the configured line limit (1000)."
    }
  },
  "required": ["absolute_path"]
}`

// ReadFile is the read_file tool (tools.md §3.2).
type ReadFile struct {
	Base
	env *Env
}

// NewReadFile returns the read_file tool working in env.
func NewReadFile(env *Env) *ReadFile {
	return &ReadFile{env: env, Base: Base{Spec: Spec{
		Name:             "read_file",
		DisplayName:      "ReadFile",
		Description:      readFileDescription,
		Schema:           []byte(readFileSchema),
		Kind:             KindRead,
		ParameterAliases: map[string]string{"file_path": "absolute_path"},
	}}}
}

// readFileRequest is a validated read_file call.
type readFileRequest struct {
	abs                 string
	offset, limit       int
	hasOffset, hasLimit bool
}

// request validates params in the order of §3.2: empty path, relative or
// outside path, offset, limit, .qwenignore.
func (r *ReadFile) request(params map[string]any) (*readFileRequest, *ToolError) {
	raw, _ := String(params, "absolute_path")
	if strings.TrimSpace(raw) == "" {
		return nil, InvalidParams(`Argument "absolute_path" must not be empty.`)
	}
	abs, terr := r.env.absPath(raw, pathOptions{AllowTemp: true})
	if terr != nil {
		return nil, terr
	}
	req := &readFileRequest{abs: abs}
	if _, present := params["offset"]; present {
		o, ok := intParam(params, "offset")
		if !ok {
			return nil, InvalidParams("params/offset must be integer")
		}
		if o < 0 {
			return nil, InvalidParams(`Argument "offset" must be 0 or more.`)
		}
		req.offset, req.hasOffset = o, true
	}
	if _, present := params["limit"]; present {
		l, ok := intParam(params, "limit")
		if !ok {
			return nil, InvalidParams("params/limit must be integer")
		}
		if l <= 0 {
			return nil, InvalidParams(`Argument "limit" must be 1 or more.`)
		}
		req.limit, req.hasLimit = l, true
	}
	if terr := r.env.qwenIgnored(abs); terr != nil {
		return nil, terr
	}
	return req, nil
}

// Validate checks the arguments (§3.2).
func (r *ReadFile) Validate(params map[string]any) *ToolError {
	_, terr := r.request(params)
	return terr
}

// Describe is `<rel>` plus the window asked for.
func (r *ReadFile) Describe(params map[string]any) string {
	req, terr := r.request(params)
	if terr != nil {
		raw, _ := String(params, "absolute_path")
		return readTitlePath(raw)
	}
	title := readTitlePath(r.env.Rel(req.abs))
	switch {
	case req.hasOffset && req.hasLimit:
		return fmt.Sprintf("%s (lines %d-%d)", title, req.offset+1, req.offset+req.limit)
	case req.hasOffset:
		return fmt.Sprintf("%s (from line %d)", title, req.offset+1)
	case req.hasLimit:
		return fmt.Sprintf("%s (first %d lines)", title, req.limit)
	}
	return title
}

// Locations is the file, at the first line asked for.
func (r *ReadFile) Locations(params map[string]any) []Location {
	req, terr := r.request(params)
	if terr != nil {
		return nil
	}
	return []Location{{Path: req.abs, Line: req.offset + 1}}
}

// Execute reads the file: the unchanged-read shortcut of §2.9 when it
// applies, else the read pipeline, and records the read in the ledger.
func (r *ReadFile) Execute(ctx context.Context, call *Call, params map[string]any, _ func(Output)) (Result, error) {
	req, terr := r.request(params)
	if terr != nil {
		return Result{Error: terr}, nil
	}
	var ledger *Ledger
	if call != nil {
		ledger = call.Ledger
	}
	if err := syncClient(ctx, call, req.abs); err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		terr, display := readFailure(req.abs, err)
		return Result{Error: terr, Display: Markdown(display)}, nil
	}
	rel := r.env.Rel(req.abs)
	if !req.hasOffset && !req.hasLimit && r.unchangedSinceFullRead(ledger, req.abs) {
		return TextResult(fmt.Sprintf("[%s has not changed since you read it in full earlier in this conversation, "+
			"so it is not repeated here. If that earlier content is no longer available to you, or the file may "+
			"have changed outside these tools, read it again with an explicit offset and limit.]", rel),
			Markdown("Unchanged: "+rel)), nil
	}

	limit := r.env.lineLimit()
	if req.hasLimit {
		limit = req.limit
	}
	c, err := r.env.readContent(ctx, readSpec{Path: req.abs, Offset: req.offset, Limit: limit, Budget: r.env.threshold()})
	if err != nil {
		return Result{}, err
	}
	if c.Err != nil {
		return Result{Error: c.Err, Display: Markdown(c.ErrDisplay)}, nil
	}
	if c.Entry != nil {
		entry := *c.Entry
		if req.hasOffset || req.hasLimit {
			entry.Full = false
		}
		entry.ByReadFile = entry.Full
		ledger.record(req.abs, entry)
	}
	switch {
	case c.Media != nil:
		return Result{LLMContent: []Part{{InlineData: c.Media}}, Display: Markdown(c.Display)}, nil
	case !c.Windowed:
		return TextResult(c.Message, Markdown(c.Display)), nil
	case !c.Window.Truncated:
		return TextResult(c.Window.Text, Markdown("")), nil
	}
	w := c.Window
	display := fmt.Sprintf("Read lines %d-%d of %d from %s", w.Start, w.End, w.Total, rel)
	if w.Cut {
		display += " (truncated)"
	}
	return TextResult(fmt.Sprintf("Lines %d-%d of %d (read other lines with offset and limit).\n\n---\n\n%s",
		w.Start, w.End, w.Total, w.Text), Markdown(display)), nil
}

// unchangedSinceFullRead is the condition of §2.9's shortcut: the last
// ledger event for abs is a full, editable read_file result from the
// current history epoch, and the file has not changed since.
func (r *ReadFile) unchangedSinceFullRead(l *Ledger, abs string) bool {
	if l == nil {
		return false
	}
	entry, known, unchanged, err := r.env.unchanged(l, abs)
	return known && err == nil && unchanged && entry.ByReadFile && entry.Full && entry.Editable &&
		entry.HistoryEpoch == l.currentEpoch()
}

// readTitleMax is the longest path a title shows (§2.2).
const readTitleMax = 80

// readTitlePath shortens a display path for a title to 80 characters,
// replacing its middle with "...".
func readTitlePath(p string) string {
	n := utf8.RuneCountInString(p)
	if n <= readTitleMax {
		return p
	}
	r := []rune(p)
	head := (readTitleMax - 3) / 2
	tail := readTitleMax - 3 - head
	return string(r[:head]) + "..." + string(r[n-tail:])
}
