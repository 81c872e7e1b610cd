package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/tailscale/hujson"
)

// maxSettingsOpeners bounds how many objects and arrays a settings file
// may open. hujson reads nested values by recursion, so the bound keeps a
// hostile file from growing the stack without end; a real settings file
// opens a few hundred.
const maxSettingsOpeners = 100_000

// parseJSONC parses a settings file: JSON with // and /* */ comments and
// trailing commas. An empty file (or one with only comments) is an empty
// object; any other top level than an object is an error.
func parseJSONC(data []byte) (map[string]any, error) {
	clean, err := standardSettings(data)
	if err != nil {
		return nil, err
	}
	if clean == nil {
		return map[string]any{}, nil
	}
	return decodeSettings(clean)
}

// standardSettings turns a settings file into standard JSON (hujson blanks
// out comments and trailing commas with spaces, keeping every newline and
// offset), or an error that names the line and column. A file with
// nothing but white space and comments gives nil.
func standardSettings(data []byte) ([]byte, error) {
	data = bytes.TrimPrefix(data, []byte(BOMUTF8))
	if n := bytes.Count(data, []byte("{")) + bytes.Count(data, []byte("[")); n > maxSettingsOpeners {
		return nil, fmt.Errorf("the settings open %d objects and arrays, more than the %d allowed", n, maxSettingsOpeners)
	}
	// Parse keeps pointers into its input and Standardize writes there.
	src, invalid := maskInvalidUTF8(data)
	v, err := hujson.Parse(src)
	if err != nil {
		if onlyComments(src) {
			return nil, nil
		}
		return nil, settingsSyntaxError(err)
	}
	v.Standardize()
	out := v.Pack()
	// Where the standard text kept a masked byte (in a string), the
	// original goes back; in a comment it was blanked like the rest.
	for _, i := range invalid {
		if out[i] == invalidMask {
			out[i] = data[i]
		}
	}
	return out, nil
}

// invalidMask stands in for a byte that is not UTF-8 while hujson reads
// the file: hujson refuses such bytes in comments, which a settings file
// saved in another encoding may have, and which JSON ignores.
const invalidMask = 'x'

// maskInvalidUTF8 copies data with each byte that is not part of valid
// UTF-8 replaced by invalidMask, and says where.
func maskInvalidUTF8(data []byte) ([]byte, []int) {
	src := bytes.Clone(data)
	if utf8.Valid(src) {
		return src, nil
	}
	var at []int
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && n == 1 {
			src[i] = invalidMask
			at = append(at, i)
		}
		i += n
	}
	return src, at
}

// onlyComments reports whether data holds no value, only white space and
// comments (all of them closed): then an object appended after it is the
// one value hujson finds.
func onlyComments(data []byte) bool {
	v, err := hujson.Parse(append(bytes.Clone(data), "\n{}"...))
	return err == nil && v.StartOffset >= len(data)
}

// settingsSyntaxError words hujson's error ("hujson: line L, column C:
// ...") the way the settings problems read.
func settingsSyntaxError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "hujson: ")
	pos, detail, _ := strings.Cut(msg, ": ")
	switch {
	case strings.HasPrefix(detail, "parsing comment"):
		detail = "unterminated comment"
	case errors.Is(err, io.ErrUnexpectedEOF):
		detail = "unexpected end of file"
	case strings.HasSuffix(detail, "after top-level value"):
		detail = "unexpected content after the settings object"
	}
	return fmt.Errorf("%s: %s", pos, detail)
}

// decodeSettings decodes standard JSON that must be one object.
func decodeSettings(clean []byte) (map[string]any, error) {
	var v any
	if err := json.Unmarshal(clean, &v); err != nil {
		return nil, jsonError(clean, err)
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
