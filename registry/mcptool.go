package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/qwen-ls/qwen-ls/tools"
)

// toolDef is one tool as tools/list describes it.
type toolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations struct {
		ReadOnlyHint *bool `json:"readOnlyHint"`
	} `json:"annotations"`
}

// listTools runs tools/list, following the pages.
func (c *mcpConn) listTools(ctx context.Context) ([]toolDef, error) {
	var all []toolDef
	cursor := ""
	seen := map[string]bool{}
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, err := c.request(ctx, string(mcp.MethodToolsList), params)
		if err != nil {
			return nil, err
		}
		var page struct {
			Tools      []toolDef `json:"tools"`
			NextCursor string    `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("the tools/list answer is not valid: %w", err)
		}
		all = append(all, page.Tools...)
		if page.NextCursor == "" {
			return all, nil
		}
		if seen[page.NextCursor] {
			return nil, errors.New("the tools/list pages repeat a cursor")
		}
		seen[page.NextCursor] = true
		cursor = page.NextCursor
	}
}

// progressNote is one notifications/progress.
type progressNote struct {
	progress, total float64
	hasTotal        bool
	message         string
}

// call runs tools/call for t and converts the answer (tools.md §4.3).
func (s *mcpServer) call(ctx context.Context, t *mcpTool, params map[string]any, onOutput func(tools.Output)) (tools.Result, error) {
	alias, name := s.cfg.Alias, t.remote
	if !s.host.life.enter() {
		return tools.Result{}, context.Canceled
	}
	defer s.host.life.leave()
	// The call also ends when the Sources close.
	parent := ctx
	ctx, cancelCall := context.WithCancel(ctx)
	defer cancelCall()
	defer context.AfterFunc(s.host.life.ctx, cancelCall)()
	cancelled := func() error {
		if parent.Err() != nil {
			return parent.Err()
		}
		return context.Canceled
	}

	c, err := s.ready(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, cancelled()
		}
		return tools.ErrorResult(tools.ErrorMCPTool, fmt.Sprintf("MCP server '%s' is not available: %v", alias, err)), nil
	}

	token := "qwen-ls-progress-" + strconv.FormatInt(c.nextID.Add(1), 10)
	if onOutput != nil {
		c.mu.Lock()
		c.progress[token] = func(n progressNote) { onOutput(tools.Output{Text: n.String()}) }
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			delete(c.progress, token)
			c.mu.Unlock()
		}()
	}
	if params == nil {
		params = map[string]any{}
	}
	callCtx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	raw, err := c.request(callCtx, string(mcp.MethodToolsCall), map[string]any{
		"name":      name,
		"arguments": params,
		"_meta":     map[string]any{"progressToken": token},
	})
	switch {
	case ctx.Err() != nil || s.host.life.ctx.Err() != nil:
		// Cancelled, even if an answer made it meanwhile.
		return tools.Result{}, cancelled()
	case err == nil:
	case callCtx.Err() != nil:
		return tools.ErrorResult(tools.ErrorMCPTool, fmt.Sprintf("The MCP tool %q did not answer within %d ms.", name, s.cfg.Timeout.Milliseconds())), nil
	case isRPCError(err):
		var re *rpcError
		errors.As(err, &re)
		detail, _ := json.Marshal(re.details)
		return tools.Result{
			Error:   tools.Errorf(tools.ErrorMCPTool, "The MCP tool %q failed for the arguments %s: %s", name, compactJSON(params), detail),
			Display: tools.Markdown(fmt.Sprintf("MCP tool %q failed: %s", name, re.details.Message)),
		}, nil
	default:
		if s.host.closing() {
			return tools.Result{}, cancelled()
		}
		// The server may have acted on the request, so it is not sent
		// again; the next call reconnects.
		reason := s.lost(c, err)
		return tools.ErrorResult(tools.ErrorMCPTool, fmt.Sprintf("MCP server '%s' connection lost during the call: %s", alias, reason)), nil
	}
	return convertCallResult(s.host.env, alias, name, params, raw), nil
}

// String is the live output line: "Progress: <progress>[/<total>] <message>".
func (n progressNote) String() string {
	s := "Progress: " + strconv.FormatFloat(n.progress, 'f', -1, 64)
	if n.hasTotal {
		s += "/" + strconv.FormatFloat(n.total, 'f', -1, 64)
	}
	if n.message != "" {
		s += " " + n.message
	}
	return s
}

// mcpTool is one tool of an MCP server. The registry gives it its
// registered name (tools.md §4.4) through withName.
type mcpTool struct {
	tools.Base
	server   *mcpServer
	remote   string
	readOnly bool

	// mu guards named: this tool under each registered name it has had,
	// kept so that its compiled schema is reused across rebuilds.
	mu    sync.Mutex
	named map[string]*mcpTool
}

func newMCPTool(s *mcpServer, d toolDef) *mcpTool {
	schema := d.InputSchema
	if !isJSONObject(schema) {
		schema = json.RawMessage(defaultParameters)
	}
	readOnly := d.Annotations.ReadOnlyHint != nil && *d.Annotations.ReadOnlyHint
	kind := tools.KindOther
	if readOnly {
		kind = tools.KindRead
	}
	return &mcpTool{
		Base: tools.Base{Spec: tools.Spec{
			Name:          sanitizeName(d.Name),
			DisplayName:   fmt.Sprintf("%s (%s MCP Server)", d.Name, s.cfg.Alias),
			Description:   d.Description,
			Schema:        schema,
			Kind:          kind,
			StreamsOutput: true,
			Source:        tools.MCPSource(s.cfg.Alias),
		}},
		server:   s,
		remote:   d.Name,
		readOnly: readOnly,
	}
}

func (t *mcpTool) remoteName() string { return t.remote }

func (t *mcpTool) withName(name string) tools.Tool {
	if name == t.Spec.Name {
		return t
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if n, ok := t.named[name]; ok {
		return n
	}
	spec := t.Spec
	spec.Name = name
	n := &mcpTool{Base: tools.Base{Spec: spec}, server: t.server, remote: t.remote, readOnly: t.readOnly}
	if t.named == nil {
		t.named = map[string]*mcpTool{}
	}
	t.named[name] = n
	return n
}

// Describe is the arguments as compact JSON.
// Describe is the call's title: the server's tool and its arguments as
// short key=value pairs, e.g. `search (docs): query="retry policy"`, not
// the raw JSON.
func (t *mcpTool) Describe(params map[string]any) string {
	head := t.remote + " (" + t.server.cfg.Alias + ")"
	if args := argumentSummary(params); args != "" {
		return head + ": " + args
	}
	return head
}

// argumentSummary writes arguments as key=value pairs in key order, each
// value cut to 40 characters and the whole to 100.
func argumentSummary(params map[string]any) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		v := compactJSON(params[k])
		if r := []rune(v); len(r) > 40 {
			v = string(r[:39]) + "…"
		}
		parts = append(parts, k+"="+v)
	}
	out := strings.Join(parts, " ")
	if r := []rune(out); len(r) > 100 {
		out = string(r[:99]) + "…"
	}
	return out
}

// ShouldConfirm asks unless the server is trusted or the tool says it only
// reads.
func (t *mcpTool) ShouldConfirm(context.Context, *tools.Call, map[string]any) (*tools.Confirmation, *tools.ToolError) {
	if t.server.cfg.Trust || t.readOnly {
		return nil, nil
	}
	alias := t.server.cfg.Alias
	return &tools.Confirmation{
		Title: fmt.Sprintf("Confirm MCP Tool: %s (%s)", t.remote, alias),
		Details: &tools.MCPConfirmation{
			ServerName:      alias,
			ToolName:        t.remote,
			ToolDisplayName: t.DisplayName(),
			PermissionRules: []string{"mcp__" + alias + "__" + t.remote},
		},
	}, nil
}

func (t *mcpTool) Execute(ctx context.Context, _ *tools.Call, params map[string]any, onOutput func(tools.Output)) (tools.Result, error) {
	return t.server.call(ctx, t, params, onOutput)
}
