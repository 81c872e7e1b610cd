package tools

import (
	"github.com/qwen-ls/qwen-ls/tools/lazy"

	"os"
	"slices"
	"strings"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// The environment of the processes the agent starts (shell commands, MCP
// servers, the tool discovery and call commands) is the server's own minus
// its secrets: the variables the server reads keys from, and every
// variable whose value is a secret the settings configure. A command that
// prints its environment then shows nothing the model may not see.

// keyVars are the variables the server reads API keys from
// (protocol.md §10, tools.md web_search,
// and the default key variables of Qwen Code's model providers).
var keyVars = []string{"OPENAI_API_KEY", "DASHSCOPE_API_KEY", "TAVILY_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"}

// qwenKeyVar matches qwen-ls's and Qwen Code's own variables that hold a
// credential (QWEN_API_KEY, QWEN_OAUTH_TOKEN, …).
var qwenKeyVar = lazy.Regexp{Expr: `^QWEN_.*(KEY|TOKEN|SECRET|PASSWORD)`}

// secretName matches the names of settings (and of MCP env variables and
// headers) whose values are secrets.
var secretName = lazy.Regexp{Expr: `(?i)(api[_-]?key|token|secret|password|authorization)`}

// minSecretLen is the shortest configured value treated as a secret:
// shorter ones would match ordinary words.
const minSecretLen = 8

// ConfiguredSecrets are the values a session file, a log line, an error
// reply or a child's environment must never hold, longest first so that a
// secret that contains another is replaced whole. All holds the model's key
// (from the settings, the environment or a .env file), every model
// provider's key and every secret of the .env files (Settings.KeyValues),
// and every string of minSecretLen
// or more in the settings under a name that says secret, or in an MCP
// server's env or headers. Named leaves out the env and header values
// whose own name does not say secret: those are often ordinary values
// ("PATH": "$PATH"), fine to redact from a log but not to take from a
// child's environment.
func ConfiguredSecrets(st *workspace.Settings) (all, named []string) {
	if key := st.Model().APIKey; len(key) >= minSecretLen {
		all = append(all, key)
		named = append(named, key)
	}
	// The keys of every model provider (their envKey variables) and the
	// secrets of the .env files, which the settings tree does not hold.
	for _, key := range st.KeyValues() {
		if len(key) >= minSecretLen {
			all = append(all, key)
			named = append(named, key)
		}
	}
	var walk func(v any, byName, inEnv bool)
	walk = func(v any, byName, inEnv bool) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(x, byName || secretName.Get().MatchString(k), inEnv || k == "env" || k == "headers")
			}
		case []any:
			for _, x := range v {
				walk(x, byName, inEnv)
			}
		case string:
			if len(v) < minSecretLen {
				return
			}
			if byName || inEnv {
				all = append(all, v)
			}
			if byName {
				named = append(named, v)
			}
		}
	}
	walk(st.Merged(), false, false)
	longestFirst := func(a, b string) int { return len(b) - len(a) }
	slices.SortFunc(all, longestFirst)
	slices.SortFunc(named, longestFirst)
	return all, named
}

// keySourceVars are the variables the settings name as where a key comes
// from: the string value of every "envKey" (Qwen Code's model providers).
func keySourceVars(st *workspace.Settings) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && strings.EqualFold(k, "envKey") && s != "" {
					out = append(out, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(st.Merged())
	return out
}

// ChildEnv is the environment for a process the agent starts: the
// server's own (os.Environ) without the secrets of st. Nil st strips the
// key variables only.
func ChildEnv(st *workspace.Settings) []string {
	var secrets, names []string
	if st != nil {
		_, secrets = ConfiguredSecrets(st)
		names = keySourceVars(st)
	}
	return filterEnv(os.Environ(), names, secrets)
}

// filterEnv returns env (KEY=value entries) without the key variables,
// the variables named in drop, and every variable whose value is one of
// secrets or holds one (as "Bearer <key>" does).
func filterEnv(env, drop, secrets []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if slices.Contains(keyVars, name) || qwenKeyVar.Get().MatchString(name) || slices.Contains(drop, name) {
			continue
		}
		if len(value) >= minSecretLen && slices.ContainsFunc(secrets, func(s string) bool { return strings.Contains(value, s) }) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
