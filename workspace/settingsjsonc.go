package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// parseJSONC parses a settings file: JSON with // and /* */ comments and
// trailing commas. An empty file (or one with only comments) is an empty
// object; any other top level than an object is an error.
func parseJSONC(data []byte) (map[string]any, error) {
	data = bytes.TrimPrefix(data, []byte(BOMUTF8))
	clean, err := stripJSONC(data)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(clean)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(clean))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, jsonError(clean, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := lineCol(clean, int(dec.InputOffset()))
		return nil, fmt.Errorf("line %d, column %d: unexpected content after the settings object", line, col)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the settings must be a JSON object")
	}
	return m, nil
}

func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(data, int(se.Offset))
		return fmt.Errorf("line %d, column %d: %w", line, col, err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("unexpected end of file")
	}
	return err
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// stripJSONC blanks out comments and trailing commas with spaces, keeping
// every newline and offset, so JSON errors point at the right place. Text
// inside strings is left alone ("http://host" is not a comment).
func stripJSONC(data []byte) ([]byte, error) {
	out := append([]byte(nil), data...)
	inStr := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				line, col := lineCol(out, i)
				return nil, fmt.Errorf("line %d, column %d: unterminated /* comment", line, col)
			}
			stop := i + 2 + end + 2
			for j := i; j < stop; j++ {
				if out[j] != '\n' {
					out[j] = ' '
				}
			}
			i = stop - 1
		}
	}
	// Comments are gone, so a trailing comma is one followed by only
	// white space and then a closing bracket.
	inStr = false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case ',':
			j := i + 1
			for j < len(out) && isJSONSpace(out[j]) {
				j++
			}
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out, nil
}

func isJSONSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}
