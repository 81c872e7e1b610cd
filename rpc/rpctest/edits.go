package rpctest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// AppliedEdit is one workspace/applyEdit the fake editor received.
type AppliedEdit struct {
	URI string
	// Version is the pinned version of a TextDocumentEdit, or nil for a
	// changes map.
	Version *int32
	Edits   []TextEdit
}

// TextEdit is an LSP TextEdit.
type TextEdit struct {
	Range struct {
		Start, End struct{ Line, Character int }
	}
	NewText string
}

// ApplyEditsLikeAnEditor makes the fake editor answer workspace/applyEdit
// the way VS Code does: it checks the pinned version against its own
// buffer, applies the edits to the buffer text it tracks, sends the
// resulting didChange (full text), and answers applied. utf8 says which
// encoding the ranges use. Buffers must have been opened with OpenTracked.
func (e *Editor) ApplyEditsLikeAnEditor(utf8 bool) {
	e.Handle("workspace/applyEdit", func(params json.RawMessage) (any, error) {
		var p struct {
			Edit struct {
				DocumentChanges []struct {
					TextDocument struct {
						URI     string `json:"uri"`
						Version *int32 `json:"version"`
					} `json:"textDocument"`
					Edits []TextEdit `json:"edits"`
				} `json:"documentChanges"`
				Changes map[string][]TextEdit `json:"changes"`
			} `json:"edit"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		var all []AppliedEdit
		for _, dc := range p.Edit.DocumentChanges {
			all = append(all, AppliedEdit{URI: dc.TextDocument.URI, Version: dc.TextDocument.Version, Edits: dc.Edits})
		}
		for uri, edits := range p.Edit.Changes {
			all = append(all, AppliedEdit{URI: uri, Edits: edits})
		}
		e.mu.Lock()
		e.applied = append(e.applied, all...)
		e.mu.Unlock()
		for _, a := range all {
			path := strings.TrimPrefix(a.URI, "file://")
			e.mu.Lock()
			text, ok := e.texts[path]
			v := e.versions[path]
			e.mu.Unlock()
			if !ok {
				return map[string]any{"applied": false, "failureReason": "the fake editor has no buffer for " + a.URI}, nil
			}
			if a.Version != nil && *a.Version != v {
				return map[string]any{"applied": false, "failureReason": fmt.Sprintf("version %d is not the buffer's %d", *a.Version, v)}, nil
			}
			next, err := applyTextEdits(text, a.Edits, utf8)
			if err != nil {
				return map[string]any{"applied": false, "failureReason": err.Error()}, nil
			}
			e.ReplaceTracked(path, next)
		}
		return map[string]any{"applied": true}, nil
	})
}

// AppliedEdits returns every workspace/applyEdit received so far.
func (e *Editor) AppliedEdits() []AppliedEdit {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]AppliedEdit(nil), e.applied...)
}

// OpenTracked opens a buffer whose text the fake editor keeps, so that
// edits and typing can be applied to it.
func (e *Editor) OpenTracked(path, text string) {
	e.t.Helper()
	e.mu.Lock()
	e.texts[path] = text
	e.mu.Unlock()
	e.Open(path, text)
}

// ReplaceTracked sets a tracked buffer's text and sends it as a full-text
// didChange; it returns the new version.
func (e *Editor) ReplaceTracked(path, text string) int32 {
	e.mu.Lock()
	e.texts[path] = text
	e.mu.Unlock()
	return e.Replace(path, text)
}

// Text returns a tracked buffer's text.
func (e *Editor) Text(path string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.texts[path]
}

// applyTextEdits applies non-overlapping LSP edits to text, converting
// positions in either encoding independently of the server's code.
func applyTextEdits(text string, edits []TextEdit, utf8Enc bool) (string, error) {
	type span struct {
		start, end int
		text       string
	}
	var spans []span
	for _, ed := range edits {
		s, err := offset(text, ed.Range.Start.Line, ed.Range.Start.Character, utf8Enc)
		if err != nil {
			return "", err
		}
		en, err := offset(text, ed.Range.End.Line, ed.Range.End.Character, utf8Enc)
		if err != nil {
			return "", err
		}
		spans = append(spans, span{s, en, ed.NewText})
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		if sp.start < last || sp.end < sp.start {
			return "", fmt.Errorf("overlapping or reversed edits")
		}
		b.WriteString(text[last:sp.start])
		b.WriteString(sp.text)
		last = sp.end
	}
	b.WriteString(text[last:])
	return b.String(), nil
}

func offset(text string, line, char int, utf8Enc bool) (int, error) {
	lines := strings.SplitAfter(text, "\n")
	if line > len(lines) || (line == len(lines) && char > 0) {
		return 0, fmt.Errorf("line %d is past the end", line)
	}
	if line == len(lines) {
		return len(text), nil
	}
	start := 0
	for _, l := range lines[:line] {
		start += len(l)
	}
	l := strings.TrimRight(lines[line], "\r\n")
	if utf8Enc {
		if char > len(l) {
			return 0, fmt.Errorf("character %d is past the line end", char)
		}
		return start + char, nil
	}
	units := 0
	for i, r := range l {
		if units == char {
			return start + i, nil
		}
		units++
		if r >= 0x10000 && r <= utf8.MaxRune {
			units++
		}
	}
	if units == char {
		return start + len(l), nil
	}
	return 0, fmt.Errorf("character %d is past the line end", char)
}
