package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/procgroup"
	"github.com/qwen-ls/qwen-ls/tools/sandbox"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// Command discovery (tools.md §4.2): a command prints function declarations,
// and each declared tool runs as another command.

const (
	// defaultCommandTimeout is tools.commandToolTimeout's default.
	defaultCommandTimeout = 60 * time.Second
	// discoveryOutputLimit is how much the discovery command may write to
	// either stream before it is stopped.
	discoveryOutputLimit = 10 << 20
	// killGrace is how long a process group has between SIGTERM and
	// SIGKILL (tools.md §3.8), and how long pipes may stay open after the
	// leader has exited.
	killGrace = procgroup.KillGrace
)

// discoveryConfig is what the settings say about command discovery.
type discoveryConfig struct {
	// Discovery is the discovery command line; "" means no discovery.
	Discovery string
	// Call is the call command, an executable path.
	Call    string
	Timeout time.Duration
	// Dir is the primary root, where both commands run.
	Dir string
	// Settings name the secrets kept from the discovery command's
	// environment (tools.ChildEnv); nil keeps only the key variables out.
	Settings *workspace.Settings
}

// readDiscoveryConfig reads the discovery settings: the older
// tools.toolDiscoveryCommand and tools.toolCallCommand win, and the newer
// tools.discoveryCommand and tools.callCommand are used when they are unset.
func readDiscoveryConfig(s *workspace.Settings, primaryRoot string) discoveryConfig {
	first := func(keys ...string) string {
		for _, k := range keys {
			if v := strings.TrimSpace(s.String(k, "")); v != "" {
				return v
			}
		}
		return ""
	}
	cfg := discoveryConfig{
		Discovery: first("tools.toolDiscoveryCommand", "tools.discoveryCommand"),
		Call:      first("tools.toolCallCommand", "tools.callCommand"),
		Timeout:   defaultCommandTimeout,
		Dir:       primaryRoot,
		Settings:  s,
	}
	if ms := s.Int("tools.commandToolTimeout", 0); ms > 0 {
		cfg.Timeout = time.Duration(ms) * time.Millisecond
	}
	return cfg
}

// discoveryError is a failed discovery run; its text is what the log shows.
type discoveryError struct{ msg string }

func (e *discoveryError) Error() string { return e.msg }

var (
	errOutputLimit = errors.New("output limit reached")
	errTimedOut    = errors.New("timed out")
)

// runDiscovery runs the discovery command and returns the declarations it
// printed, with warnings about the declarations it had to skip. An error is
// a *discoveryError, or the context's error when ctx ended first.
func runDiscovery(ctx context.Context, cfg discoveryConfig) ([]declaration, []string, error) {
	argv, err := splitCommandLine(cfg.Discovery)
	if err != nil {
		return nil, nil, &discoveryError{fmt.Sprintf("The tool discovery command could not be split into words: %v.", err)}
	}
	if len(argv) == 0 {
		return nil, nil, &discoveryError{"The tool discovery command is empty."}
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	runCtx, cancelTimeout := context.WithTimeoutCause(runCtx, cfg.Timeout, errTimedOut)
	defer cancelTimeout()

	over := func() { cancel(errOutputLimit) }
	stdout := &cappedBuffer{limit: discoveryOutputLimit, over: over}
	stderr := &cappedBuffer{limit: discoveryOutputLimit, over: over}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cfg.Dir
	cmd.Env = tools.ChildEnv(cfg.Settings)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = killGrace
	if err := startInGroup(cmd); err != nil {
		return nil, nil, &discoveryError{fmt.Sprintf("The tool discovery command could not be started: %v.", err)}
	}
	_ = waitGroup(cmd, runCtx.Done())

	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	switch context.Cause(runCtx) {
	case errOutputLimit:
		return nil, nil, &discoveryError{"The tool discovery command wrote more than 10 MiB and was stopped."}
	case errTimedOut:
		return nil, nil, &discoveryError{fmt.Sprintf("The tool discovery command did not finish within %d ms.", cfg.Timeout.Milliseconds())}
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return nil, nil, &discoveryError{fmt.Sprintf("The tool discovery command was stopped by signal %s.", procgroup.SignalName(ws.Signal()))}
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		return nil, nil, &discoveryError{fmt.Sprintf("The tool discovery command exited with code %d.", code)}
	}
	return parseDeclarations(stdout.Bytes())
}

// declaration is one function declaration the discovery command printed.
type declaration struct {
	Name        string
	Description string
	Schema      json.RawMessage
}

// parseDeclarations reads the discovery command's stdout: a JSON array whose
// elements are {"function_declarations": [...]}, {"functionDeclarations":
// [...]} or bare declarations with a name; other elements are ignored.
func parseDeclarations(out []byte) ([]declaration, []string, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(out, &elems); err != nil || elems == nil {
		return nil, nil, &discoveryError{"The tool discovery command did not print a JSON array of tools."}
	}
	var decls []declaration
	var warnings []string
	add := func(raw json.RawMessage) {
		var d struct {
			Name                 *string         `json:"name"`
			Description          *string         `json:"description"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
			Parameters           json.RawMessage `json:"parameters"`
		}
		if json.Unmarshal(raw, &d) != nil || d.Name == nil {
			warnings = append(warnings, "The tool discovery command declared a tool without a name; it is skipped.")
			return
		}
		decl := declaration{Name: *d.Name, Schema: json.RawMessage(defaultParameters)}
		if d.Description != nil {
			decl.Description = *d.Description
		}
		switch {
		case isJSONObject(d.ParametersJSONSchema):
			decl.Schema = d.ParametersJSONSchema
		case isJSONObject(d.Parameters):
			decl.Schema = lowercaseTypes(d.Parameters)
		}
		decls = append(decls, decl)
	}
	for _, e := range elems {
		var group struct {
			Snake json.RawMessage `json:"function_declarations"`
			Camel json.RawMessage `json:"functionDeclarations"`
			Name  *string         `json:"name"`
		}
		if json.Unmarshal(e, &group) != nil {
			continue // not an object
		}
		list := group.Snake
		if list == nil {
			list = group.Camel
		}
		if list != nil {
			var items []json.RawMessage
			if json.Unmarshal(list, &items) == nil {
				for _, it := range items {
					add(it)
				}
			}
			continue
		}
		if group.Name != nil {
			add(e)
		}
	}
	return decls, warnings, nil
}

func isJSONObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}

// lowercaseTypes turns a Gemini-style parameters schema, whose type names
// are OpenAPI's upper-case ones (OBJECT, STRING), into JSON Schema.
func lowercaseTypes(raw json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return json.RawMessage(defaultParameters)
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "type" {
					switch t := x.(type) {
					case string:
						v[k] = strings.ToLower(t)
						continue
					case []any:
						for i, s := range t {
							if s, ok := s.(string); ok {
								t[i] = strings.ToLower(s)
							}
						}
						continue
					}
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(defaultParameters)
	}
	return out
}

// discoveredTools turns declarations into tools. Names that are not valid
// tool names, or that are built-in names or aliases, are skipped with a
// warning; of duplicates the first wins.
func discoveredTools(decls []declaration, builtin map[string]bool, cfg discoveryConfig, run *callRunner) ([]tools.Tool, []string) {
	var out []tools.Tool
	var warnings []string
	seen := map[string]bool{}
	for _, d := range decls {
		switch {
		case !validToolName(d.Name):
			warnings = append(warnings, fmt.Sprintf(
				"The tool discovery command declared a tool named %q, which is not a valid tool name (1 to 63 letters, digits, \"_\", \".\" or \"-\"); it is skipped.", d.Name))
			continue
		case builtin[d.Name]:
			warnings = append(warnings, fmt.Sprintf(
				"The tool discovery command declared a tool named %q, which is a built-in tool's name; it is skipped.", d.Name))
			continue
		case seen[d.Name]:
			warnings = append(warnings, fmt.Sprintf(
				"The tool discovery command declared %q more than once; the first declaration is used.", d.Name))
			continue
		}
		seen[d.Name] = true
		desc := strings.TrimSpace(d.Description)
		if desc != "" {
			desc += "\n\n"
		}
		desc += fmt.Sprintf("This tool was found by running the discovery command `%s`. "+
			"A call runs `%s %s` in the project's primary folder, with the arguments as one JSON object on standard input. "+
			"When that command exits with code 0 and writes nothing to standard error, the tool returns what it wrote to standard output; "+
			"otherwise it returns a five-line report of its standard output, standard error, error, exit code and signal.",
			cfg.Discovery, cfg.Call, d.Name)
		out = append(out, &discoveredTool{
			Base: tools.Base{Spec: tools.Spec{
				Name:        d.Name,
				DisplayName: d.Name,
				Description: desc,
				Schema:      d.Schema,
				Kind:        tools.KindOther,
				Source:      tools.SourceDiscovered,
			}},
			run: run,
		})
	}
	return out, warnings
}

// callRunner is what every discovered tool of one discovery run shares: the
// call command and where and how long it runs.
type callRunner struct {
	call    string
	dir     string
	timeout time.Duration
	// env gives the §2.8 truncation its limits and folder; nil keeps the
	// output whole.
	env *tools.Env
	// life ends the calls when the Sources that made the tool closes.
	life *lifetime
}

// discoveredTool is a tool declared by the discovery command (tools.md
// §4.2): kind other, no confirmation of its own.
type discoveredTool struct {
	tools.Base
	run *callRunner
}

// Describe is the arguments as compact JSON.
func (t *discoveredTool) Describe(params map[string]any) string { return compactJSON(params) }

// Execute runs the call command with argv [name] and the arguments as JSON
// on stdin.
func (t *discoveredTool) Execute(ctx context.Context, _ *tools.Call, params map[string]any, _ func(tools.Output)) (tools.Result, error) {
	r := t.run
	if !r.life.enter() {
		return tools.Result{}, context.Canceled
	}
	defer r.life.leave()
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopLife := context.AfterFunc(r.life.ctx, cancel)
	defer stopLife()
	timeCtx, cancelTimeout := context.WithTimeoutCause(callCtx, r.timeout, errTimedOut)
	defer cancelTimeout()

	var stdout, stderr bytes.Buffer
	cmd := exec.Command(r.call, t.Name())
	cmd.Dir = r.dir
	cmd.Env = childEnv(r.env)
	cmd.Stdin = strings.NewReader(compactJSON(params))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = killGrace

	rep := callReport{}
	if err := startInGroup(cmd); err != nil {
		rep.err = err.Error()
	} else {
		_ = waitGroup(cmd, timeCtx.Done())
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		if callCtx.Err() != nil { // the Sources closed
			return tools.Result{}, context.Canceled
		}
		if context.Cause(timeCtx) == errTimedOut {
			rep.err = fmt.Sprintf("Tool call timed out after %dms", r.timeout.Milliseconds())
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
			switch {
			case ws.Exited():
				rep.code = strconv.Itoa(ws.ExitStatus())
			case ws.Signaled():
				rep.signal = procgroup.SignalName(ws.Signal())
			}
		}
	}
	rep.stdout, rep.stderr = stdout.String(), stderr.String()
	if rep.err == "" && rep.code == "0" && rep.signal == "" && rep.stderr == "" {
		text, note := truncateOutput(r.env, t.Name(), rep.stdout)
		display := text
		if note != "" {
			display = text + "\n\n" + note
		}
		return tools.TextResult(text, tools.Markdown(display)), nil
	}
	msg := rep.String()
	return tools.Result{
		LLMContent: []tools.Part{tools.TextPart(msg)},
		Display:    tools.Markdown(msg),
		Error:      tools.NewError(tools.ErrorDiscoveredToolExecution, msg),
	}, nil
}

// callReport is the five-line report of a failed call.
type callReport struct {
	stdout, stderr, err, code, signal string
}

func (r callReport) String() string {
	or := func(s, def string) string {
		s = strings.TrimRight(s, "\r\n")
		if s == "" {
			return def
		}
		return s
	}
	return "Stdout: " + or(r.stdout, "(empty)") + "\n" +
		"Stderr: " + or(r.stderr, "(empty)") + "\n" +
		"Error: " + or(r.err, "(none)") + "\n" +
		"Exit Code: " + or(r.code, "(none)") + "\n" +
		"Signal: " + or(r.signal, "(none)")
}

// compactJSON encodes v compactly, without HTML escaping; nil is {}.
func compactJSON(v any) string {
	if m, ok := v.(map[string]any); ok && m == nil {
		return "{}"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "{}"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// truncateOutput applies tools.md §2.8 to a tool's text output: the text for
// the model, and a note for the display when the text was cut ("" when it
// was not). fileBase names the file the whole output is saved to (<tool
// name>, or mcp__<server>__<tool>). A nil env keeps the text whole.
func truncateOutput(env *tools.Env, fileBase, text string) (string, string) {
	if env == nil || env.Workspace == nil {
		return text, ""
	}
	t := env.TruncateToolOutput(replaceUnsafe(fileBase), text)
	return t.Text, t.DisplayNote()
}

// splitCommandLine splits a command line into words by the shell's quoting
// rules, without running a shell: blanks separate words; '…' keeps its
// content as is; "…" keeps its content except that a backslash escapes $, `,
// ", \ and a newline; outside quotes a backslash escapes the next character,
// and backslash-newline joins lines. Nothing is expanded.
func splitCommandLine(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\\':
			if i+1 >= len(s) {
				cur.WriteByte('\\')
				inWord = true
				continue
			}
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
				inWord = true
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("a single quote is not closed")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				c := s[i]
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
					if s[i] != '\n' {
						cur.WriteByte(s[i])
					}
					continue
				}
				cur.WriteByte(c)
			}
			if !closed {
				return nil, errors.New("a double quote is not closed")
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// cappedBuffer keeps what a stream writes up to limit bytes, and calls over
// once when the stream goes past it. It keeps accepting writes, so the
// writer never blocks while it is being stopped.
type cappedBuffer struct {
	limit int
	over  func()

	mu   sync.Mutex
	buf  bytes.Buffer
	done bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.limit - b.buf.Len()
	if len(p) <= room {
		b.buf.Write(p)
		return len(p), nil
	}
	b.buf.Write(p[:max(room, 0)])
	if !b.done {
		b.done = true
		b.over()
	}
	return len(p), nil
}

func (b *cappedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}

// Process groups. Every process qwen-ls starts for discovery, discovered
// tool calls and stdio MCP servers leads its own process group, so that
// stopping it stops whatever it started too.

// startInGroup starts cmd as the leader of a new process group, under the
// supervisor that kills it and all it started if qwen-ls dies.
func startInGroup(cmd *exec.Cmd) error {
	procgroup.Prepare(cmd)
	sup, err := sandbox.Wrap(cmd, sandbox.Policy{Mode: sandbox.None})
	if err != nil {
		return err
	}
	err = cmd.Start()
	sup.Started()
	if err != nil {
		return err
	}
	if err := procgroup.Adopt(cmd.Process.Pid); err != nil {
		// Without its group the command could not be stopped with what
		// it starts: stop it now.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	return nil
}

// waitGroup waits for a command started by startInGroup. When stop closes
// first, the group is stopped; once the leader has exited, whatever is left
// in its group is stopped too.
func waitGroup(cmd *exec.Cmd, stop <-chan struct{}) error {
	pgid := cmd.Process.Pid
	exited := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-stop:
			procgroup.Terminate(pgid)
		case <-exited:
		}
	}()
	err := cmd.Wait()
	close(exited)
	<-stopped
	procgroup.Terminate(pgid)
	return err
}

// lifetime lets calls started by a tool end with the Sources that made it:
// ctx ends at close, and close waits for the calls in flight.
type lifetime struct {
	ctx    context.Context
	cancel context.CancelFunc

	// mu guards closed and orders enter against close's Wait.
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func newLifetime() *lifetime {
	ctx, cancel := context.WithCancel(context.Background())
	return &lifetime{ctx: ctx, cancel: cancel}
}

// enter records a call in flight; false means the lifetime is over.
func (l *lifetime) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.wg.Add(1)
	return true
}

func (l *lifetime) leave() { l.wg.Done() }

// close ends the lifetime and waits for the calls in flight.
func (l *lifetime) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.cancel()
	l.wg.Wait()
}
