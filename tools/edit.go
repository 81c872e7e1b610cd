package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

//go:embed edit.md
var editDescription string

var editSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {
      "type": "string",
      "description": "Absolute path of the file to change, starting with /."
    },
    "old_string": {
      "type": "string",
      "description": "The exact text to replace, copied from the file with its whitespace and indentation and without line-number prefixes. Include enough surrounding lines to make it unique. Empty to create a new file."
    },
    "new_string": {
      "type": "string",
      "description": "The text that replaces old_string, exactly as it should appear in the file (or the content of a new file)."
    },
    "replace_all": {
      "type": "boolean",
      "description": "Replace every occurrence of old_string instead of requiring exactly one. Default false."
    }
  },
  "required": ["file_path", "old_string", "new_string"]
}`)

// Edit is the edit tool (tools.md §3.4): it replaces text in a file, or
// creates one, through the editor review of §2.11.
type Edit struct {
	Base
	env *Env
}

// NewEdit returns the edit tool, also callable as replace.
func NewEdit(env *Env) *Edit {
	return &Edit{env: env, Base: Base{Spec: Spec{
		Name:        "edit",
		DisplayName: "Edit",
		Description: strings.TrimSpace(editDescription),
		Schema:      editSchema,
		Kind:        KindEdit,
		Aliases:     []string{"replace"},
	}}}
}

// Validate checks the path and the undeclared expected_replacements.
func (t *Edit) Validate(params map[string]any) *ToolError {
	abs, terr := t.env.filePathArg(params)
	if terr != nil {
		return terr
	}
	if terr := t.env.qwenIgnored(abs); terr != nil {
		return terr
	}
	if _, present := params["expected_replacements"]; present {
		if _, ok := expectedReplacements(params); !ok {
			return InvalidParams(`Argument "expected_replacements" must be a whole number, 1 or more.`)
		}
	}
	return nil
}

// expectedReplacements reads expected_replacements: a whole number of at
// least 1, given as a number or as a string of digits (it is not declared,
// so the schema step never converts it).
func expectedReplacements(params map[string]any) (int, bool) {
	v, present := params["expected_replacements"]
	if !present {
		return 0, false
	}
	n, ok := intParam(params, "expected_replacements")
	if s, isString := v.(string); isString {
		var err error
		n, err = strconv.Atoi(strings.TrimSpace(s))
		ok = err == nil
	}
	return n, ok && n >= 1
}

// Describe is "Create <rel>", "No file changes to <rel>", or the file and
// the first lines of the two strings.
func (t *Edit) Describe(params map[string]any) string {
	p, _ := String(params, "file_path")
	rel := readTitlePath(t.env.Rel(cleanPathArg(p)))
	old, _ := String(params, "old_string")
	repl, _ := String(params, "new_string")
	switch {
	case old == "":
		return "Create " + rel
	case old == repl:
		return "No file changes to " + rel
	}
	return fmt.Sprintf("%s: %s... => %s...", rel, firstLineShort(old), firstLineShort(repl))
}

// firstLineShort is the first line of s, cut to 30 characters.
func firstLineShort(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	line = strings.TrimSuffix(line, "\r")
	if utf8.RuneCountInString(line) > 30 {
		line = string([]rune(line)[:30])
	}
	return line
}

// Locations is the file.
func (t *Edit) Locations(params map[string]any) []Location {
	p, _ := String(params, "file_path")
	return []Location{{Path: cleanPathArg(p)}}
}

// ShouldConfirm computes the edit (tools.md §3.4 steps 1–6) and returns it
// as the proposal the user reviews. Every failure to make the edit is found
// here, before the user sees anything.
func (t *Edit) ShouldConfirm(ctx context.Context, call *Call, params map[string]any) (*Confirmation, *ToolError) {
	p, _ := String(params, "file_path")
	abs := cleanPathArg(p)
	spec := editSpec{}
	spec.Old, _ = String(params, "old_string")
	spec.New, _ = String(params, "new_string")
	spec.ReplaceAll, _ = boolParam(params, "replace_all")
	spec.Expected, _ = expectedReplacements(params)

	snap, terr, err := t.env.priorText(ctx, call, abs, verbEditing)
	if terr != nil {
		return nil, terr
	}
	if err != nil {
		return nil, Errorf(errorEditPreparationFailure, "Could not prepare the edit of %s: %s", abs, rootCause(err))
	}
	exists := snap != nil

	if spec.Old == "" {
		if exists {
			return nil, Errorf(errorAttemptToCreateExistingFile,
				"%s already exists, so it cannot be created. To change it, read it and give a non-empty old_string.", abs)
		}
		return t.env.changeProposal(abs, "Confirm Edit", nil, spec.New), nil
	}
	if !exists {
		return nil, Errorf(errorFileNotFound, "%s does not exist. To create it, give an empty old_string.", abs)
	}
	if terr := checkBufferWritable(call, snap); terr != nil {
		return nil, terr
	}

	crlf := strings.Contains(snap.Text, "\r\n")
	m := matchEdit(strings.ReplaceAll(snap.Text, "\r\n", "\n"), spec)
	if terr := matchError(abs, spec, m); terr != nil {
		return nil, terr
	}
	newText := m.Result
	if crlf {
		newText = crlfText(newText)
	}
	return t.env.changeProposal(abs, "Confirm Edit", snap, newText), nil
}

// matchError turns a failed match into the model's message (tools.md §3.4
// step 4 and 5).
func matchError(abs string, spec editSpec, m editMatch) *ToolError {
	switch m.Failure {
	case failNoOccurrence:
		return Errorf(errorEditNoOccurrenceFound,
			"old_string was not found in %s, so nothing was changed. It must match the file exactly, including whitespace and indentation, with no added escaping; read the file again to check.", abs)
	case failExpectedMismatch:
		times := "times"
		if m.Count == 1 {
			times = "time"
		}
		return Errorf(errorEditExpectedOccurrenceMismatch,
			"old_string occurs %d %s in %s, not the %d that expected_replacements gives; nothing was changed.", m.Count, times, abs, spec.Expected)
	case failAmbiguous:
		return Errorf(errorEditExpectedOccurrenceMismatch,
			"old_string occurs %d times in %s, so the edit is ambiguous; nothing was changed. Include more of the surrounding text to make it unique, or set replace_all to true to change every occurrence.", m.Count, abs)
	case failSameStrings:
		return Errorf(errorEditNoChange, "old_string and new_string are the same, so %s was not changed.", abs)
	case failNoEffect:
		return Errorf(errorEditNoChange, "The edit would leave %s as it is, so nothing was changed.", abs)
	}
	return nil
}

// Execute applies the proposal kept on call (tools.md §2.11): the match is
// not run again.
func (t *Edit) Execute(ctx context.Context, call *Call, params map[string]any, _ func(Output)) (Result, error) {
	c, terr := proposalOf(ctx, t, call, params)
	if terr != nil {
		return Result{Error: terr}, nil
	}
	base := "Edited " + c.FilePath + "."
	if c.IsNewFile {
		base = "Created the file " + c.FilePath + "."
	}
	// The compiler's verdict (verdict.go) compares with the file as it
	// was just before the change.
	v := t.env.takeBaseline(ctx, call, c.FilePath)
	res, err := t.env.applyChange(ctx, call, c, base, true)
	return v.finish(ctx, res, err)
}
