package rpc

import (
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// secretSet is the configured secrets, kept current with the settings:
// the session files, the log and the error replies leave them out.
type secretSet struct {
	mu      sync.Mutex
	secrets []string
}

// watchSecrets starts following the settings' secrets.
func (s *Server) watchSecrets() {
	s.secrets.set(configuredSecrets(s.ws.Settings))
	s.ws.Settings.OnChange(func() { s.secrets.set(configuredSecrets(s.ws.Settings)) })
}

func (ss *secretSet) set(v []string) {
	ss.mu.Lock()
	ss.secrets = v
	ss.mu.Unlock()
}

func (ss *secretSet) list() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.secrets
}

// scrub removes from text every configured secret, then whatever looks
// like a key (scrubSecrets).
func (ss *secretSet) scrub(text string) string {
	for _, v := range ss.list() {
		text = strings.ReplaceAll(text, v, "[redacted]")
	}
	return scrubSecrets(text)
}

// secretKey matches the names of settings that hold secrets.
var secretKey = regexp.MustCompile(`(?i)(api[_-]?key|token|secret|password|authorization)`)

// minSecretLen is the shortest configured value treated as a secret:
// shorter ones would redact ordinary words.
const minSecretLen = 8

// configuredSecrets are the values a session file, a log line or an error
// reply must never hold: the model's key (from the settings or the
// environment), and every string in the settings under a name that says
// secret, or in an MCP server's env or headers; those of minSecretLen or
// more, longest first, so that a secret that contains another is replaced
// whole.
func configuredSecrets(st *workspace.Settings) []string {
	var out []string
	if key := st.Model().APIKey; len(key) >= minSecretLen {
		out = append(out, key)
	}
	var walk func(v any, secret bool)
	walk = func(v any, secret bool) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(x, secret || secretKey.MatchString(k) || k == "env" || k == "headers")
			}
		case []any:
			for _, x := range v {
				walk(x, secret)
			}
		case string:
			if secret && len(v) >= minSecretLen {
				out = append(out, v)
			}
		}
	}
	walk(st.Merged(), false)
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// secretPattern matches the shapes API keys take in the wild (OpenAI and
// DashScope "sk-" keys, bearer tokens, and key=value pairs whose name says
// key, token or secret), so a key that slips into an error message never
// reaches a log.
var secretPattern = regexp.MustCompile(`(?i)(sk-[A-Za-z0-9_\-]{6,}|bearer\s+[A-Za-z0-9._\-]{6,}|((api[_-]?key|token|secret|password)["']?\s*[:=]\s*["']?)[^\s"',}]{4,})`)

func scrubSecrets(s string) string {
	return secretPattern.ReplaceAllStringFunc(s, func(m string) string {
		sub := secretPattern.FindStringSubmatch(m)
		if sub[3] != "" {
			return sub[3] + "[redacted]"
		}
		return "[redacted]"
	})
}
