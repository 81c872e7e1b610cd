package rpc

import (
	"regexp"
	"strings"
	"sync"

	"github.com/qwen-ls/qwen-ls/tools"
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

// configuredSecrets are the values a session file, a log line or an error
// reply must never hold (tools.ConfiguredSecrets; the children's
// environment leaves them out too, tools.ChildEnv).
func configuredSecrets(st *workspace.Settings) []string {
	all, _ := tools.ConfiguredSecrets(st)
	return all
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
