package workspace

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/joho/godotenv"
)

// Environment files, as Qwen Code 0.24 reads them (docs/protocol.md "Model
// configuration"; findEnvFiles and loadEnvironment in its
// packages/cli/src/config/environment.ts). A variable is looked up in the
// process environment first, then in these files, first file first, then
// in the settings' "env" object:
//
//  1. one project file, only when the folder is trusted (a repository must
//     not point the agent at its own endpoint or key): the first that
//     exists of <dir>/.qwen/.env and <dir>/.env, for the primary root and,
//     when it is inside the home folder, each folder above it up to the
//     home folder; the walk stops at it;
//  2. ~/.qwen/.env (the user settings folder, $QWEN_HOME), always;
//  3. ~/.qwen/.env when $QWEN_HOME is elsewhere, and ~/.env, always.
//
// So a project's .env is not read when its .qwen/.env exists, nor a parent
// folder's when the project has one, as in Qwen Code: a key there would
// otherwise win over the user's. The files are never loaded into the
// process environment, so the processes the agent starts do not inherit
// them.

// maxDotEnvBytes bounds one environment file; a larger one is skipped.
const maxDotEnvBytes = 1 << 20

// dotEnvFile is one environment file that was read.
type dotEnvFile struct {
	path string
	vars map[string]string
}

// dotEnvPaths returns the environment files in lookup order: in a
// trusted folder, the first that exists of .qwen/.env and .env of the
// primary root and of each folder above it up to the home folder, as Qwen
// Code walks up from its working directory (Qwen Code goes on to the file
// system's root; qwen-ls does not leave the home folder); then the user's
// files. With watch set, for the watcher, it returns both of the root's
// own, whether or not they exist, in place of the project file.
func (s *Settings) dotEnvPaths(watch bool) []string {
	var paths []string
	s.mu.RLock()
	trusted := s.trust.Trusted
	s.mu.RUnlock()
	home, _ := s.getenv("HOME")
	if home != "" {
		home = filepath.Clean(home)
	}
	if (trusted || watch) && s.primaryRoot != nil {
		if root := s.primaryRoot(); root != "" {
			// Above a root outside the home folder, folders like /tmp
			// are other users' to write: only the root itself is read.
			root = filepath.Clean(root)
			underHome := home != "" && strings.HasPrefix(root, home+string(filepath.Separator))
		walk:
			for dir := root; dir != home; {
				for _, p := range []string{filepath.Join(dir, ".qwen", ".env"), filepath.Join(dir, ".env")} {
					if watch {
						paths = append(paths, p)
					} else if _, err := os.Stat(p); err == nil {
						// Qwen Code loads the first project file
						// that exists, even one it cannot read.
						paths = append(paths, p)
						break walk
					}
				}
				parent := filepath.Dir(dir)
				if watch || !underHome || parent == dir {
					break
				}
				dir = parent
			}
		}
	}
	if s.userDir != "" {
		paths = append(paths, filepath.Join(s.userDir, ".env"))
	}
	if home != "" {
		// With $QWEN_HOME elsewhere, Qwen Code still reads the key file
		// users left in ~/.qwen.
		paths = append(paths, filepath.Join(home, ".qwen", ".env"), filepath.Join(home, ".env"))
	}
	return paths
}

// dotEnvFiles returns the environment files in lookup order, read now.
// Missing, unreadable, oversized and malformed files are skipped.
func (s *Settings) dotEnvFiles() []dotEnvFile {
	var out []dotEnvFile
	seen := map[string]bool{}
	for _, p := range s.dotEnvPaths(false) {
		p = filepath.Clean(p)
		if seen[p] {
			continue
		}
		seen[p] = true
		if vars := readDotEnv(p); vars != nil {
			out = append(out, dotEnvFile{path: p, vars: vars})
		}
	}
	return out
}

// dotEnvSignature sums up the files' content, to tell a change.
func dotEnvSignature(files []dotEnvFile) string {
	var b strings.Builder
	for _, f := range files {
		b.WriteString(f.path)
		b.WriteByte(0)
		keys := make([]string, 0, len(f.vars))
		for k := range f.vars {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteString(k + "=" + f.vars[k] + "\x00")
		}
		b.WriteByte(1)
	}
	return b.String()
}

// readDotEnv parses one environment file (godotenv's syntax: KEY=value,
// export, quotes, comments), or returns nil. A $VAR in a value refers
// only to a variable set earlier in the same file, never to the process
// environment.
func readDotEnv(path string) map[string]string {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxDotEnvBytes {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	vars, err := godotenv.UnmarshalBytes(bytes.TrimPrefix(data, []byte(BOMUTF8)))
	if err != nil {
		return nil
	}
	return vars
}

// envLookup looks variables up as the model configuration does: the
// process environment, the environment files, then the settings' "env"
// object. It reads the files once, when made.
type envLookup struct {
	getenv   func(string) (string, bool)
	files    []dotEnvFile
	settings map[string]any
}

func (s *Settings) newEnvLookup() *envLookup {
	env, _ := s.Get("env")
	m, _ := env.(map[string]any)
	return &envLookup{getenv: s.getenv, files: s.dotEnvFiles(), settings: m}
}

// lookup returns a variable's non-empty value and where it came from.
func (l *envLookup) lookup(name string) (value, source string, ok bool) {
	if name == "" {
		return "", "", false
	}
	if v, ok := l.getenv(name); ok && v != "" {
		return v, "environment variable " + name, true
	}
	for _, f := range l.files {
		if v := f.vars[name]; v != "" {
			return v, name + " in " + f.path, true
		}
	}
	if v, ok := l.settings[name].(string); ok && v != "" {
		return v, name + " in the settings' env", true
	}
	return "", "", false
}

// secretVarName matches names of variables whose values are credentials.
var secretVarName = regexp.MustCompile(`(?i)(key|token|secret|password|passwd|credential|auth)`)

// KeyValues returns the credentials the model configuration can reach
// outside the settings files: the value of every model provider's envKey
// (and the default key variables), wherever it is set, and every value in
// the environment files under a name that says secret. Logs, error
// replies, session files and child processes must never hold them
// (tools.ConfiguredSecrets).
func (s *Settings) KeyValues() []string {
	l := s.newEnvLookup()
	names := map[string]bool{}
	for _, e := range s.ModelProviders() {
		names[e.EnvKey] = true
	}
	for _, v := range defaultEnvKey {
		names[v] = true
	}
	var out []string
	for n := range names {
		if v, _, ok := l.lookup(n); ok {
			out = append(out, v)
		}
	}
	for _, f := range l.files {
		for n, v := range f.vars {
			if names[n] || secretVarName.MatchString(n) {
				out = append(out, v)
			}
		}
	}
	return out
}
