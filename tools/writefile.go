package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"os"
	"strings"
)

//go:embed writefile.md
var writeFileDescription string

var writeFileSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {
      "type": "string",
      "description": "Absolute path of the file to write, starting with /."
    },
    "content": {
      "type": "string",
      "description": "The complete content the file should have."
    }
  },
  "required": ["file_path", "content"]
}`)

// WriteFile is the write_file tool (tools.md §3.3): it creates a file or
// replaces its whole content, through the editor review of §2.11.
type WriteFile struct {
	Base
	env *Env
}

// NewWriteFile returns the write_file tool.
func NewWriteFile(env *Env) *WriteFile {
	return &WriteFile{env: env, Base: Base{Spec: Spec{
		Name:        "write_file",
		DisplayName: "WriteFile",
		Description: strings.TrimSpace(writeFileDescription),
		Schema:      writeFileSchema,
		Kind:        KindEdit,
	}}}
}

// Validate checks the path: absolute, inside the workspace, not a
// directory, not excluded by .qwenignore.
func (t *WriteFile) Validate(params map[string]any) *ToolError {
	abs, terr := t.env.filePathArg(params)
	if terr != nil {
		return terr
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return Errorf(errorTargetIsDirectory, "%s is a directory, not a file.", abs)
	}
	return t.env.qwenIgnored(abs)
}

// Describe is "Writing to <rel>".
func (t *WriteFile) Describe(params map[string]any) string {
	p, _ := String(params, "file_path")
	return "Writing to " + readTitlePath(t.env.Rel(cleanPathArg(p)))
}

// Locations is the file.
func (t *WriteFile) Locations(params map[string]any) []Location {
	p, _ := String(params, "file_path")
	return []Location{{Path: cleanPathArg(p)}}
}

// ShouldConfirm checks the prior read and proposes the new content, in the
// file's line-ending style.
func (t *WriteFile) ShouldConfirm(ctx context.Context, call *Call, params map[string]any) (*Confirmation, *ToolError) {
	p, _ := String(params, "file_path")
	abs := cleanPathArg(p)
	content, _ := String(params, "content")

	snap, terr, err := t.env.priorText(ctx, call, abs, verbOverwriting)
	if terr != nil {
		return nil, terr
	}
	if err != nil {
		return nil, cannotVerify(abs, err)
	}
	if snap == nil {
		return t.env.changeProposal(abs, "Confirm Write", nil, content), nil
	}
	if terr := checkBufferWritable(call, snap); terr != nil {
		return nil, terr
	}
	newText := strings.ReplaceAll(content, "\r\n", "\n")
	if strings.Contains(snap.Text, "\r\n") {
		newText = crlfText(newText)
	}
	return t.env.changeProposal(abs, "Confirm Write", snap, newText), nil
}

// Execute writes the proposal kept on call (tools.md §2.11).
func (t *WriteFile) Execute(ctx context.Context, call *Call, params map[string]any, _ func(Output)) (Result, error) {
	c, terr := proposalOf(ctx, t, call, params)
	if terr != nil {
		return Result{Error: terr}, nil
	}
	base := "Overwrote the file " + c.FilePath + "."
	if c.IsNewFile {
		base = "Created the file " + c.FilePath + "."
	}
	// The compiler's verdict (verdict.go) compares with the file as it
	// was just before the change.
	v := t.env.takeBaseline(ctx, call, c.FilePath)
	res, err := t.env.applyChange(ctx, call, c, base, false)
	return v.finish(ctx, res, err)
}
