package registry

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// serverConfig is one MCP server as the settings describe it. Two configs
// that compare equal (reflect.DeepEqual) start the same server.
type serverConfig struct {
	Alias     string
	Transport string
	Command   string
	Args      []string
	// Env is the environment overlay, as sorted KEY=value pairs.
	Env []string
	// Dir is where a stdio server runs: its cwd resolved against the
	// primary root, else the primary root.
	Dir     string
	URL     string
	Headers map[string]string
	Timeout time.Duration
	Trust   bool
	Include []string
	Exclude []string
	// DiscoveryTimeout bounds connecting and listing the tools.
	DiscoveryTimeout time.Duration
	// Invalid, when set, says why the server cannot be started.
	Invalid string
}

// readServerConfigs reads mcpServers, mcp.mcpServerCommand (alias
// mcp.serverCommand) and the mcp.allowed and mcp.excluded filters, and
// returns the servers to run by alias.
func readServerConfigs(s *workspace.Settings, primaryRoot string) map[string]serverConfig {
	out := map[string]serverConfig{}
	if v, ok := s.Get("mcpServers"); ok {
		if m, ok := v.(map[string]any); ok {
			for alias, entry := range m {
				out[alias] = parseServerConfig(alias, entry, primaryRoot)
			}
		}
	}
	line := strings.TrimSpace(s.String("mcp.mcpServerCommand", ""))
	if line == "" {
		line = strings.TrimSpace(s.String("mcp.serverCommand", ""))
	}
	if line != "" {
		cfg := serverConfig{Alias: mcpCommandServer, Transport: transportStdio, Dir: primaryRoot,
			Timeout: defaultCallTimeout, DiscoveryTimeout: defaultStdioDiscovery}
		argv, err := splitCommandLine(line)
		switch {
		case err != nil:
			cfg.Invalid = fmt.Sprintf("mcp.mcpServerCommand could not be split into words: %v.", err)
		case len(argv) == 0:
			cfg.Invalid = "mcp.mcpServerCommand is empty."
		default:
			cfg.Command, cfg.Args = argv[0], argv[1:]
		}
		out[mcpCommandServer] = cfg
	}
	if allowed := s.Strings("mcp.allowed"); len(allowed) > 0 {
		for alias := range out {
			if !slices.Contains(allowed, alias) {
				delete(out, alias)
			}
		}
	}
	for _, alias := range s.Strings("mcp.excluded") {
		delete(out, alias)
	}
	return out
}

// parseServerConfig reads one mcpServers entry.
func parseServerConfig(alias string, v any, primaryRoot string) serverConfig {
	cfg := serverConfig{Alias: alias, Timeout: defaultCallTimeout}
	m, ok := v.(map[string]any)
	if !ok {
		cfg.Invalid = fmt.Sprintf("MCP server %q is not a JSON object, so it cannot be started.", alias)
		return cfg
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	strs := func(k string) []string {
		var out []string
		if l, ok := m[k].([]any); ok {
			for _, x := range l {
				if s, ok := x.(string); ok {
					out = append(out, s)
				}
			}
		}
		return out
	}
	strMap := func(k string) map[string]string {
		o, ok := m[k].(map[string]any)
		if !ok {
			return nil
		}
		out := map[string]string{}
		for key, x := range o {
			switch x := x.(type) {
			case string:
				out[key] = x
			case float64, bool:
				out[key] = fmt.Sprint(x)
			}
		}
		return out
	}
	ms := func(k string, def time.Duration) time.Duration {
		switch x := m[k].(type) {
		case float64, int, int64, json.Number:
			if f, err := strconv.ParseFloat(fmt.Sprint(x), 64); err == nil && f > 0 {
				return time.Duration(f * float64(time.Millisecond))
			}
		case string:
			if n, err := strconv.Atoi(strings.TrimSpace(x)); err == nil && n > 0 {
				return time.Duration(n) * time.Millisecond
			}
		}
		return def
	}

	switch {
	case str("httpUrl") != "":
		cfg.Transport, cfg.URL = transportHTTP, str("httpUrl")
	case str("url") != "":
		cfg.Transport, cfg.URL = transportSSE, str("url")
	case str("command") != "":
		cfg.Transport, cfg.Command, cfg.Args = transportStdio, str("command"), strs("args")
	default:
		cfg.Invalid = fmt.Sprintf("MCP server %q sets none of httpUrl, url and command, so it cannot be started.", alias)
	}
	cfg.Headers = strMap("headers")
	for k, v := range strMap("env") {
		cfg.Env = append(cfg.Env, k+"="+v)
	}
	sort.Strings(cfg.Env)
	cfg.Dir = primaryRoot
	if d := str("cwd"); d != "" {
		if !filepath.IsAbs(d) {
			d = filepath.Join(primaryRoot, d)
		}
		cfg.Dir = filepath.Clean(d)
	}
	cfg.Timeout = ms("timeout", defaultCallTimeout)
	cfg.Trust, _ = m["trust"].(bool)
	cfg.Include, cfg.Exclude = strs("includeTools"), strs("excludeTools")
	def := defaultRemoteDiscovery
	if cfg.Transport == transportStdio {
		def = defaultStdioDiscovery
	}
	cfg.DiscoveryTimeout = ms("discoveryTimeoutMs", def)
	return cfg
}

// wantsTool applies includeTools and excludeTools: "name(…)" entries match
// name too, and exclude wins.
func (c *serverConfig) wantsTool(name string) bool {
	match := func(list []string) bool {
		for _, e := range list {
			e = strings.TrimSpace(e)
			if i := strings.IndexByte(e, '('); i > 0 && strings.HasSuffix(e, ")") {
				e = e[:i]
			}
			if e == name {
				return true
			}
		}
		return false
	}
	if match(c.Exclude) {
		return false
	}
	return len(c.Include) == 0 || match(c.Include)
}
