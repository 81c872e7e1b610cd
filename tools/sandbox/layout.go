package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Layout is what the read and write allow-lists of a command that runs
// unasked are made from: the person's home folder, the workspace roots,
// the command's private temporary folder and the places that must never
// be read (qwen-ls's own state, when it lives outside the home folder).
type Layout struct {
	// Home is the person's home folder ("" when there is none).
	Home string
	// Roots are the workspace roots.
	Roots []string
	// TempDir is the command's private temporary folder.
	TempDir string
	// Private are folders never readable, beside the home folders.
	Private []string
	// Getenv reads the environment (the cache and toolchain variables);
	// nil is os.Getenv.
	Getenv func(string) string
}

// homeToolchains are the folders under a home folder that hold
// toolchains and the configuration they need to run: readable, not
// writable. Paths use slashes. Go's settings file (what go env -w
// writes, in the user config folder: .config on Linux, Library/Application
// Support on macOS) is read as git's are: without it go falls back to its
// defaults without a word, and builds without the person's GOFLAGS or
// fetches their GOPRIVATE modules through the public proxy.
var homeToolchains = []string{
	"go", ".cargo/bin", ".rustup", ".pyenv", ".rbenv", ".nvm", ".volta", ".fnm", ".bun/bin",
	".deno/bin", ".sdkman", ".asdf", ".local/bin", ".local/lib", ".local/share/mise",
	".local/share/fnm", ".dotnet", ".ghcup", ".cabal/bin", ".elan", ".opam", ".nix-profile",
	".gem", ".terminfo", ".gitconfig", ".config/git", ".config/go/env",
	"Library/Application Support/go/env",
}

// cache is a build cache a command may write: where it is, relative to
// the home folder or to the user cache folder, and the variable that
// moves it.
type cache struct {
	// Env names the variable that gives the folder (first wins).
	Env []string
	// Home and UserCache are the default place, relative to the home
	// folder or os.UserCacheDir (one of them).
	Home, UserCache string
	// Tool is the program whose presence on PATH makes qwen-ls create
	// the folder when it is missing (tools create their cache at first
	// use, which the sandbox would refuse: its parent is not writable).
	Tool string
}

// caches are the named build caches, each written by the tool that owns
// it. They are shared with the person's own builds: docs/security.md says
// what that means.
var caches = []cache{
	{Env: []string{"GOCACHE"}, UserCache: "go-build", Tool: "go"},
	{Env: []string{"GOMODCACHE"}, Home: "go/pkg/mod", Tool: "go"},
	// gopls's own file cache (the agent's language servers run under
	// this policy: docs/design.md "Code intelligence").
	{Env: []string{"GOPLSCACHE"}, UserCache: "gopls", Tool: "gopls"},
	{Env: []string{"npm_config_cache", "NPM_CONFIG_CACHE"}, Home: ".npm", Tool: "npm"},
	{UserCache: "yarn", Tool: "yarn"},
	{Home: ".yarn/berry/cache"},
	{Env: []string{"PNPM_HOME"}, Home: ".local/share/pnpm", Tool: "pnpm"},
	{UserCache: "pnpm"},
	{Env: []string{"PIP_CACHE_DIR"}, UserCache: "pip", Tool: "pip3"},
	{UserCache: "pypoetry"},
	{Env: []string{"UV_CACHE_DIR"}, UserCache: "uv"},
	{Home: ".cargo/registry", Tool: "cargo"},
	{Home: ".cargo/git"},
	{Home: ".m2/repository"},
	{Home: ".gradle/caches"},
	{Home: ".gradle/wrapper"},
	{Env: []string{"CCACHE_DIR"}, UserCache: "ccache"},
	{Env: []string{"SCCACHE_DIR"}, UserCache: "sccache"},
	{Env: []string{"DENO_DIR"}, UserCache: "deno"},
	{Home: ".bun/install/cache"},
	{UserCache: "node-gyp"},
	{Env: []string{"PRE_COMMIT_HOME"}, UserCache: "pre-commit"},
	// Go's local telemetry counters, which every go command updates (in
	// the user config folder); they run nothing.
	{Home: ".config/go/telemetry"},
	{Home: "Library/Application Support/go/telemetry"},
}

func (l Layout) getenv(k string) string {
	if l.Getenv != nil {
		return l.Getenv(k)
	}
	return os.Getenv(k)
}

// userCacheDir is os.UserCacheDir for this layout's home and
// environment.
func (l Layout) userCacheDir() string {
	switch runtime.GOOS {
	case "darwin":
		if l.Home == "" {
			return ""
		}
		return filepath.Join(l.Home, "Library", "Caches")
	case "windows":
		return l.getenv("LocalAppData")
	}
	if x := l.getenv("XDG_CACHE_HOME"); filepath.IsAbs(x) {
		return x
	}
	if l.Home == "" {
		return ""
	}
	return filepath.Join(l.Home, ".cache")
}

// Caches are the build caches a command that runs unasked may write, as
// absolute paths; missing ones whose tool is installed are created.
func (l Layout) Caches() []string {
	var out []string
	ucd := l.userCacheDir()
	for _, c := range caches {
		dir := ""
		for _, e := range c.Env {
			if v := l.getenv(e); filepath.IsAbs(v) {
				dir = v
				break
			}
		}
		if dir == "" && c.Env != nil && c.Env[0] == "GOMODCACHE" {
			if gp := l.getenv("GOPATH"); gp != "" {
				first, _, _ := strings.Cut(gp, string(os.PathListSeparator))
				if filepath.IsAbs(first) {
					dir = filepath.Join(first, "pkg", "mod")
				}
			}
		}
		switch {
		case dir != "":
		case c.Home != "" && l.Home != "":
			dir = filepath.Join(l.Home, filepath.FromSlash(c.Home))
		case c.UserCache != "" && ucd != "":
			dir = filepath.Join(ucd, c.UserCache)
		default:
			continue
		}
		dir = filepath.Clean(dir)
		if c.Tool != "" && onPath(c.Tool) {
			_ = os.MkdirAll(dir, 0o755)
		}
		if !slices.Contains(out, dir) {
			out = append(out, dir)
		}
	}
	return out
}

// Writable are the folders a command that runs unasked and may write
// writes: the roots, its temporary folder and the build caches.
func (l Layout) Writable() []string {
	var out []string
	add := func(p string) {
		if p != "" && filepath.IsAbs(p) && !slices.Contains(out, filepath.Clean(p)) {
			out = append(out, filepath.Clean(p))
		}
	}
	for _, r := range l.Roots {
		add(r)
	}
	add(l.TempDir)
	for _, c := range l.Caches() {
		add(c)
	}
	return out
}

// excluded are the folders nothing below which is readable but what is
// listed again: every home folder, and the private folders.
func (l Layout) excluded() []string {
	var out []string
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) {
			return
		}
		p = filepath.Clean(p)
		if p == string(filepath.Separator) || slices.Contains(out, p) {
			return
		}
		out = append(out, p)
	}
	add(l.Home)
	for _, h := range homeFolders(runtime.GOOS) {
		add(h)
	}
	for _, p := range l.Private {
		add(p)
	}
	return out
}

// homeFolders are the system's folders of home folders and root's home.
// On macOS /var is a link to /private/var, and the data volume shows
// /Users and /private again below /System/Volumes/Data (firmlinks): each
// spelling is excluded, since a link is followed and a firmlinked path
// may be named either way.
func homeFolders(goos string) []string {
	if goos == "darwin" {
		return []string{"/Users", "/var/root", "/private/var/root",
			"/System/Volumes/Data/Users", "/System/Volumes/Data/private/var/root"}
	}
	return []string{"/home", "/root"}
}

// isUsersFolder reports whether ex holds one home folder per person, each
// the next part below it.
func isUsersFolder(ex string) bool {
	return ex == "/home" || ex == "/Users" || ex == "/System/Volumes/Data/Users"
}

// homes are the home folders toolchains may live in: the person's, and
// another (root's, when the person's HOME was moved) that a PATH entry
// points into.
func (l Layout) homes() []string {
	var out []string
	if l.Home != "" {
		out = append(out, filepath.Clean(l.Home))
	}
	for _, dir := range filepath.SplitList(l.getenv("PATH")) {
		for _, ex := range l.excluded() {
			if isUsersFolder(ex) {
				// The home folder is the next part below.
				if rel, ok := strings.CutPrefix(dir, ex+"/"); ok {
					user, _, _ := strings.Cut(rel, "/")
					if h := filepath.Join(ex, user); !slices.Contains(out, h) {
						out = append(out, h)
					}
				}
				continue
			}
			if within(dir, ex) && !slices.Contains(out, ex) && !slices.Contains(l.Private, ex) {
				out = append(out, ex)
			}
		}
	}
	return out
}

// Readable are the folders and files a command that runs unasked may
// read: everything outside the home folders and the private folders,
// and below them only the roots, the temporary folder, the caches, the
// toolchains (and the folders on PATH) and git's own configuration. A
// folder on the way to an excluded one is not readable itself: its other
// entries are listed one by one, so that nothing of the home folder can
// be read, not even the names in it.
func (l Layout) Readable() []string {
	ex := l.excluded()
	if runtime.GOOS == "windows" {
		return nil
	}
	var out []string
	add := func(p string) {
		if p != "" && filepath.IsAbs(p) && !slices.Contains(out, filepath.Clean(p)) {
			out = append(out, filepath.Clean(p))
		}
	}
	// Ancestors of an excluded folder, "/" included.
	ancestors := map[string]bool{}
	for _, e := range ex {
		for d := filepath.Dir(e); ; d = filepath.Dir(d) {
			ancestors[d] = true
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	var dirs []string
	for d := range ancestors {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		if slices.ContainsFunc(ex, func(e string) bool { return within(d, e) }) {
			// Nothing below an excluded folder is listed, not even the
			// way to another one (another person's home in /home).
			continue
		}
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			p := filepath.Join(d, e.Name())
			if ancestors[p] || slices.Contains(ex, p) {
				continue
			}
			add(p)
		}
	}
	for _, w := range l.Writable() {
		add(w)
	}
	for _, h := range l.homes() {
		for _, t := range homeToolchains {
			add(filepath.Join(h, filepath.FromSlash(t)))
		}
	}
	for _, dir := range filepath.SplitList(l.getenv("PATH")) {
		if filepath.IsAbs(dir) {
			add(dir)
		}
	}
	return pruneReadable(out)
}

// pruneReadable drops what does not exist and what another entry already
// covers once links are resolved (/bin is /usr/bin on most systems): each
// entry is a rule the supervisor opens and adds for every command.
func pruneReadable(paths []string) []string {
	real := make([]string, len(paths))
	for i, p := range paths {
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		real[i] = r
	}
	var out []string
	for i, p := range paths {
		if real[i] == "" {
			continue
		}
		covered := false
		for j, q := range real {
			if j != i && q != "" && q != real[i] && within(real[i], q) {
				covered = true
				break
			}
			if j < i && q == real[i] {
				// The same place named twice: the first stays.
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}

var (
	pathMu    sync.Mutex
	pathTools = map[string]bool{}
)

// onPath reports whether the program is on PATH, looked up once.
func onPath(tool string) bool {
	pathMu.Lock()
	defer pathMu.Unlock()
	found, ok := pathTools[tool]
	if !ok {
		_, err := exec.LookPath(tool)
		found = err == nil
		pathTools[tool] = found
	}
	return found
}
