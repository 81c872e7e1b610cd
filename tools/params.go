package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
)

// PrepareArgs turns the model's raw arguments string into the params of one
// call, per tools.md §2.1:
//
//  1. parse as JSON (empty or null means {}); a parse failure or a
//     non-object is an invalid_tool_params error with the exact messages of
//     §2.1;
//  2. drop top-level properties whose value is null;
//  3. apply the tool's parameter aliases (the canonical property wins when
//     both are present; among aliases of one property, the first by name);
//  4. validate against the tool's JSON Schema, unless the tool skips that
//     step or its schema does not compile; on failure repair once (see
//     ArgsSchema.repair) and validate again; report only the first
//     violation (the order is documented on compareViolations); unknown
//     top-level properties are ignored;
//  5. run the tool's own Validate.
//
// Numbers are json.Number, so they reach discovered and MCP tools exactly as
// the model wrote them; use the typed getters (intParam, floatParam, ...) to read
// params. PrepareArgs never panics on any input, and a panic in the tool's
// Validate becomes an unhandled_exception error.
func PrepareArgs(tool Tool, raw string) (map[string]any, *ToolError) {
	params, terr := parseArgs(raw)
	if terr != nil {
		return nil, terr
	}
	for k, v := range params {
		if v == nil {
			delete(params, k)
		}
	}
	aliases := tool.ParameterAliases()
	// Sorted, so that when two aliases of one property both appear, the
	// same one (the first by name) always wins.
	for _, alias := range slices.Sorted(maps.Keys(aliases)) {
		canonical := aliases[alias]
		v, ok := params[alias]
		if !ok || alias == canonical {
			continue
		}
		delete(params, alias)
		if _, taken := params[canonical]; !taken {
			params[canonical] = v
		}
	}
	if !tool.SkipSchemaValidation() {
		if msg := schemaCheck(tool, params); msg != "" {
			return nil, InvalidParams(msg)
		}
	}
	if terr := safeValidate(tool, params); terr != nil {
		return nil, terr
	}
	return params, nil
}

// parseArgs is steps 1 of §2.1.
func parseArgs(raw string) (map[string]any, *ToolError) {
	if strings.TrimSpace(raw) == "" {
		return map[string]any{}, nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		// The standard decoder's messages are the ones the model is
		// shown. They are worked out only for arguments that failed:
		// the probe copies the arguments twice, megabytes for a large
		// write.
		var probe json.RawMessage
		if perr := json.Unmarshal([]byte(raw), &probe); perr != nil {
			err = perr
		}
		return nil, InvalidParams(fmt.Sprintf(
			"Invalid JSON in tool call arguments: %s. Arguments must be a JSON object.", err))
	}
	switch v := v.(type) {
	case map[string]any:
		return v, nil
	case nil:
		// null carries no arguments, like an empty string.
		return map[string]any{}, nil
	case []any:
		return nil, InvalidParams("The arguments must be a JSON object, not array.")
	case string:
		return nil, InvalidParams("The arguments must be a JSON object, not string.")
	case bool:
		return nil, InvalidParams("The arguments must be a JSON object, not boolean.")
	default:
		return nil, InvalidParams("The arguments must be a JSON object, not number.")
	}
}

// decodeJSON decodes one JSON value with numbers as json.Number.
func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid character after top-level value")
	}
	return v, nil
}

// argsSchemaProvider is implemented by tools that cache their compiled
// schema (every tool embedding Base).
type argsSchemaProvider interface {
	ArgsSchema() *ArgsSchema
}

// schemaCheck is step 4 of §2.1; it returns the message of the first
// violation, or "" when the params pass (possibly after repair).
func schemaCheck(tool Tool, params map[string]any) string {
	var s *ArgsSchema
	if p, ok := tool.(argsSchemaProvider); ok {
		s = p.ArgsSchema()
	} else {
		s, _ = compileArgsSchema(tool.Schema())
	}
	if s == nil {
		return ""
	}
	msg := s.check(params)
	if msg == "" {
		return ""
	}
	if !s.repair(params) {
		return msg
	}
	return s.check(params)
}

func safeValidate(tool Tool, params map[string]any) (terr *ToolError) {
	defer func() {
		if r := recover(); r != nil {
			terr = unexpected(panicText(r))
		}
	}()
	terr = tool.Validate(params)
	if terr != nil && terr.Type == "" {
		terr = &ToolError{Message: terr.Message, Type: ErrorInvalidToolParams}
	}
	return terr
}

// String returns params[name] when it is a string.
func String(params map[string]any, name string) (string, bool) {
	s, ok := params[name].(string)
	return s, ok
}

// boolParam returns params[name] when it is a boolean.
func boolParam(params map[string]any, name string) (bool, bool) {
	b, ok := params[name].(bool)
	return b, ok
}

// floatParam returns params[name] when it is a number.
func floatParam(params map[string]any, name string) (float64, bool) {
	switch v := params[name].(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	}
	return 0, false
}

// intParam returns params[name] when it is a number without a fractional part
// that fits in an int (5 and 5.0 both count).
func intParam(params map[string]any, name string) (int, bool) {
	switch v := params[name].(type) {
	case int:
		return v, true
	case int64:
		return intOf(v)
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return intOf(i)
		}
	}
	f, ok := floatParam(params, name)
	if !ok || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return intOf(int64(f))
}

func intOf(i int64) (int, bool) {
	if i < math.MinInt || i > math.MaxInt {
		return 0, false
	}
	return int(i), true
}

// stringsParam returns params[name] when it is an array of strings.
func stringsParam(params map[string]any, name string) ([]string, bool) {
	arr, ok := params[name].([]any)
	if !ok {
		if ss, ok := params[name].([]string); ok {
			return ss, true
		}
		return nil, false
	}
	out := make([]string, 0, len(arr))
	for _, v := range arr {
		s, ok := v.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}
