package modeltest

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/tools/txtar"
)

// A script is a txtar archive of responses, one file per response, used in
// file-name order:
//
//	Any text before the first file is a comment.
//	-- 01.response --
//	reasoning: Let me look at the file.
//	text: I will read it.
//	call: read_file {"absolute_path":"$ROOT/a.txt"}
//	call[id=c7]: grep_search {"pattern":"TODO"}
//	usage: 120 30 100
//	-- 02.response --
//	status: 429
//	retry-after: 1
//	-- 03.response --
//	cut-after: 3
//	text: this stream is cut
//	-- 04.text --
//	Verbatim text for response 04, any number of lines.
//
// Directives: text (repeated lines are joined with newlines), reasoning,
// refusal, call, finish, usage (prompt completion [cached]), status, retry-after,
// body, cut-after, delay, chunk-delay, keepalive (Go durations: keepalive
// sends ": keepalive" comments at that interval during the delay),
// chunk-size, and for a recorded answer sent verbatim: raw (a file's
// path), content-type, stall-after (bytes) and stall (a duration). A file
// NN.text gives response NN's text verbatim (its final newline dropped).
// $NAME in directives is replaced from vars.

// ParseScript parses a script.
func ParseScript(data []byte, vars map[string]string) ([]Response, error) {
	files := txtar.Parse(data).Files
	byKey := map[string]*Response{}
	var keys []string
	get := func(key string) *Response {
		if r, ok := byKey[key]; ok {
			return r
		}
		r := &Response{}
		byKey[key] = r
		keys = append(keys, key)
		return r
	}
	for _, f := range files {
		key, kind, ok := strings.Cut(f.Name, ".")
		if !ok {
			return nil, fmt.Errorf("script file %q: name it NN.response or NN.text", f.Name)
		}
		r := get(key)
		switch kind {
		case "text":
			r.Text = strings.TrimSuffix(string(f.Data), "\n")
		case "response":
			if err := parseDirectives(r, string(f.Data), vars); err != nil {
				return nil, fmt.Errorf("script file %q: %w", f.Name, err)
			}
		default:
			return nil, fmt.Errorf("script file %q: unknown kind %q", f.Name, kind)
		}
	}
	sort.Strings(keys)
	out := make([]Response, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out, nil
}

// LoadScript reads and parses a script file.
func LoadScript(path string, vars map[string]string) ([]Response, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rs, err := ParseScript(data, vars)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rs, nil
}

func expand(s string, vars map[string]string) string {
	return os.Expand(s, func(name string) string {
		if v, ok := vars[name]; ok {
			return v
		}
		return "$" + name
	})
}

func parseDirectives(r *Response, body string, vars map[string]string) error {
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var texts []string
	line := 0
	for sc.Scan() {
		line++
		raw := sc.Text()
		if strings.TrimSpace(raw) == "" || strings.HasPrefix(strings.TrimSpace(raw), "#") {
			continue
		}
		name, value, ok := strings.Cut(raw, ":")
		if !ok {
			return fmt.Errorf("line %d: want 'directive: value', got %q", line, raw)
		}
		name = strings.TrimSpace(name)
		value = expand(strings.TrimPrefix(value, " "), vars)
		var err error
		switch {
		case name == "text":
			texts = append(texts, value)
		case name == "reasoning":
			r.Reasoning = value
		case name == "refusal":
			r.Refusal = value
		case name == "call" || strings.HasPrefix(name, "call["):
			tc := ToolCall{}
			if strings.HasPrefix(name, "call[id=") && strings.HasSuffix(name, "]") {
				tc.ID = strings.TrimSuffix(strings.TrimPrefix(name, "call[id="), "]")
			}
			tc.Name, tc.Arguments, _ = strings.Cut(value, " ")
			r.ToolCalls = append(r.ToolCalls, tc)
		case name == "finish":
			r.FinishReason = value
		case name == "usage":
			f := strings.Fields(value)
			if len(f) != 2 && len(f) != 3 {
				return fmt.Errorf("line %d: usage takes two or three numbers (prompt, completion, cached)", line)
			}
			u := &Usage{}
			if u.Prompt, err = strconv.Atoi(f[0]); err == nil {
				u.Completion, err = strconv.Atoi(f[1])
			}
			if err == nil && len(f) == 3 {
				u.Cached, err = strconv.Atoi(f[2])
			}
			r.Usage = u
		case name == "status":
			r.Status, err = strconv.Atoi(value)
		case name == "retry-after":
			r.RetryAfter = value
		case name == "body":
			r.Body = value
		case name == "cut-after":
			r.CutAfter, err = strconv.Atoi(value)
		case name == "chunk-size":
			r.ChunkSize, err = strconv.Atoi(value)
		case name == "delay":
			r.Delay, err = time.ParseDuration(value)
		case name == "raw":
			r.RawFile = value
		case name == "content-type":
			r.ContentType = value
		case name == "stall-after":
			r.StallAfter, err = strconv.Atoi(value)
		case name == "stall":
			r.Stall, err = time.ParseDuration(value)
		case name == "chunk-delay":
			r.ChunkDelay, err = time.ParseDuration(value)
		case name == "keepalive":
			r.KeepAlive, err = time.ParseDuration(value)
		default:
			return fmt.Errorf("line %d: unknown directive %q", line, name)
		}
		if err != nil {
			return fmt.Errorf("line %d: %s: %w", line, name, err)
		}
	}
	if len(texts) > 0 {
		r.Text = strings.Join(texts, "\n")
	}
	return sc.Err()
}
