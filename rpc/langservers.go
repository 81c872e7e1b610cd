package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/tools/codeintel"
	"github.com/qwen-ls/qwen-ls/tools/langserver"
	"github.com/qwen-ls/qwen-ls/tools/sandbox"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// The language servers qwen-ls starts itself (docs/design.md "Code
// intelligence"), for clients that do not answer qwen/lsp (ACP, exec,
// plain LSP clients) and for files the editor has no server for. They run
// only in a trusted folder, under the sandbox of the processes that run
// unasked, with the children's environment, and they see the overlay: the
// editor's unsaved buffers are synced to them before every question, and
// files written on disk are read again.

// settleQuiet is how long a server must stay quiet, after it reported on
// the file asked about, for the reports on other files (importers of a
// changed package) to be taken as complete.
const settleQuiet = 250 * time.Millisecond

// langServers is the server's own language servers. The manager is made
// at first use and remade when the lsp settings change.
type langServers struct {
	s *Server

	mu sync.Mutex
	// mgr is nil until first use, and after close.
	mgr *langserver.Manager
	// specsJSON is the lsp settings mgr was made with.
	specsJSON string
	closed    bool
	// fed maps each overlay buffer given to mgr to its overlay version.
	fed map[string]int32
	// versions maps each path mgr has open to its version there.
	versions map[string]int32
	// disk maps each file mgr has from the disk to the disk's state
	// then.
	disk map[string]diskStamp
}

type diskStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

func stampOf(path string) diskStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return diskStamp{}
	}
	return diskStamp{mod: fi.ModTime(), size: fi.Size(), ok: true}
}

// specs are the servers qwen-ls knows: those of the lsp settings, then the
// built-in ones.
func (l *langServers) specs() ([]langserver.Spec, string) {
	raw, ok := l.s.ws.Settings.Get("lsp")
	if !ok {
		return langserver.Builtin(), ""
	}
	b, _ := json.Marshal(raw)
	extra, err := langserver.ParseSettings(b)
	if err != nil {
		l.s.log.Warnf("%v; the lsp settings are ignored", err)
		return langserver.Builtin(), string(b)
	}
	return langserver.Specs(extra), string(b)
}

// withFastGopls makes the built-in gopls publish the diagnostics of a
// change's importers at once, rather than after its default second's
// delay, so that the verdict after an edit can include them.
func withFastGopls(specs []langserver.Spec) []langserver.Spec {
	out := slices.Clone(specs)
	for i, s := range out {
		if s.Name == "gopls" && s.Settings == nil && s.InitializationOptions == nil {
			out[i].InitializationOptions = json.RawMessage(`{"diagnosticsDelay":"0s"}`)
		}
	}
	return out
}

// manager returns the manager, made for the current settings.
func (l *langServers) manager() (*langserver.Manager, error) {
	specs, key := l.specs()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errors.New("the server is shutting down")
	}
	if l.mgr != nil && l.specsJSON == key {
		return l.mgr, nil
	}
	if old := l.mgr; old != nil {
		l.s.log.Infof("the lsp settings changed: restarting the language servers")
		go old.Close()
	}
	l.specsJSON = key
	l.fed, l.versions, l.disk = map[string]int32{}, map[string]int32{}, map[string]diskStamp{}
	l.mgr = langserver.New(langserver.Options{
		Specs:       withFastGopls(specs),
		Start:       l.start,
		Env:         tools.ChildEnv(l.s.ws.Settings),
		Text:        l.text,
		IdleTimeout: l.s.opts.LanguageServerIdle,
		Logf: func(format string, args ...any) {
			l.s.log.Infof("language servers: "+format, args...)
		},
	})
	return l.mgr, nil
}

// text is a file's text as the servers get it: the overlay's, else the
// disk's.
func (l *langServers) text(path string) (string, error) {
	snap, err := l.s.ws.ReadText(path)
	if err != nil {
		return "", err
	}
	return snap.Text, nil
}

// start starts a language server under the supervisor, with the sandbox
// of what runs unasked, in a process group of its own: it dies with
// qwen-ls however qwen-ls ends, and, run without the sandbox, whatever it
// leaves behind its supervisor is ended with the supervisor's cgroup.
func (l *langServers) start(cmd *exec.Cmd) (langserver.Process, error) {
	return langserver.StartGrouped(cmd, func(cmd *exec.Cmd) (func(), error) {
		sup, err := sandbox.Wrap(cmd, l.s.env.UnaskedPolicy("language-servers"))
		if err != nil {
			return nil, err
		}
		return sup.Started, nil
	})
}

// close stops every language server; called when the server ends.
func (l *langServers) close() {
	l.mu.Lock()
	l.closed = true
	mgr := l.mgr
	l.mgr = nil
	l.mu.Unlock()
	if mgr != nil {
		_ = mgr.Close()
	}
}

// wrote tells the running servers that path changed on disk.
func (l *langServers) wrote(path string) {
	l.mu.Lock()
	mgr := l.mgr
	_, tracked := l.disk[path]
	l.mu.Unlock()
	if mgr == nil || !tracked {
		return
	}
	v := mgr.Wrote(path)
	l.mu.Lock()
	if l.mgr == mgr {
		l.disk[path] = stampOf(path)
		if v != 0 {
			l.versions[path] = v
		}
	}
	l.mu.Unlock()
}

// syncOverlay gives mgr the overlay's buffers that changed since the last
// sync, and closes those the editor closed.
func (l *langServers) syncOverlay(mgr *langserver.Manager) {
	ov := l.s.ws.Overlay
	open := map[string]bool{}
	specs, _ := l.specs()
	for _, p := range ov.Paths() {
		if !l.s.ws.Roots.LexicallyInside(p) || !coveredByAny(specs, p) {
			continue
		}
		open[p] = true
		v, _ := ov.Version(p)
		l.mu.Lock()
		fv, fed := l.fed[p]
		l.mu.Unlock()
		if fed && fv == v {
			continue
		}
		buf, ok := ov.Get(p)
		if !ok {
			continue
		}
		mv := mgr.DidChange(p, buf.Text)
		l.mu.Lock()
		l.fed[p], l.versions[p] = buf.Version, mv
		delete(l.disk, p)
		l.mu.Unlock()
	}
	l.mu.Lock()
	var closed []string
	for p := range l.fed {
		if !open[p] {
			closed = append(closed, p)
			delete(l.fed, p)
			delete(l.versions, p)
		}
	}
	l.mu.Unlock()
	for _, p := range closed {
		mgr.DidClose(p)
	}
}

// untrustedMessage is the answer in an untrusted folder.
func untrustedLSPMessage(root string) string {
	return fmt.Sprintf("qwen-ls starts no language server in an untrusted folder: starting one can run the project's code "+
		"(go may download the toolchain go.mod names, and build scripts may run). Ask the person to trust the folder "+
		"(the editor's \"%s\", or `qwen-ls trust %s` in a shell) to use the lsp tool here; meanwhile use grep_search and read_file.",
		trustAction, shellQuote(root))
}

// allowed says why no language server may start, or nil.
func (l *langServers) allowed() error {
	if t := l.s.ws.Settings.Trust(); !t.Trusted {
		return &codeintel.UnavailableError{Message: untrustedLSPMessage(nonEmpty(t.Root, l.s.ws.Roots.Primary()))}
	}
	return nil
}

// installHints say how to install the built-in servers.
var installHints = map[string]string{
	"gopls":                      "go install golang.org/x/tools/gopls@latest",
	"typescript-language-server": "npm install -g typescript-language-server typescript",
	"pyright":                    "npm install -g pyright",
	"pylsp":                      "pip install python-lsp-server",
	"rust-analyzer":              "rustup component add rust-analyzer",
	"clangd":                     "the system's clangd package",
}

// noServerMessage explains a NoServerError to the model.
func noServerMessage(specs []langserver.Spec, e *langserver.NoServerError) string {
	ext := filepath.Ext(e.Path)
	if ext == "" {
		ext = filepath.Base(e.Path)
	}
	if len(e.Missing) > 0 {
		var parts []string
		for _, s := range e.Missing {
			p := fmt.Sprintf("%s (`%s` was not found on PATH", s.Name, s.Command[0])
			if h := installHints[s.Name]; h != "" {
				p += "; install it with " + h
			}
			parts = append(parts, p+")")
		}
		return fmt.Sprintf("No language server for %s files is installed: %s. Ask the person to install one, or to set its command in the settings under \"lsp\"; meanwhile use grep_search and read_file.",
			ext, strings.Join(parts, ", or "))
	}
	var known []string
	for _, s := range specs {
		var exts []string
		for e := range s.Extensions {
			exts = append(exts, e)
		}
		slices.Sort(exts)
		if len(exts) > 4 {
			exts = append(exts[:4], "…")
		}
		known = append(known, fmt.Sprintf("%s (%s)", s.Name, strings.Join(exts, " ")))
	}
	return fmt.Sprintf("No language server covers %s files. qwen-ls knows %s. Another is added in the settings under \"lsp\", as in Qwen Code: "+
		`{"lsp": {"<language>": {"command": "<server>", "args": ["--stdio"], "extensionToLanguage": {"%s": "<language>"}}}}. `+
		"Meanwhile use grep_search and read_file.", ext, strings.Join(known, ", "), ext)
}

// serverFor returns the server of path, started if need be, with path's
// current text open in it, and that text's version there.
func (l *langServers) serverFor(ctx context.Context, mgr *langserver.Manager, path string) (*langserver.Server, int32, error) {
	_, root, err := l.s.ws.Roots.Resolve(path)
	if err != nil {
		return nil, 0, &codeintel.UnavailableError{Message: fmt.Sprintf("%s is outside the workspace, so no language server of qwen-ls covers it.", path)}
	}
	srv, err := mgr.For(ctx, root, path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		var ns *langserver.NoServerError
		if errors.As(err, &ns) {
			specs, _ := l.specs()
			return nil, 0, &codeintel.UnavailableError{Message: noServerMessage(specs, ns)}
		}
		return nil, 0, &codeintel.UnavailableError{Message: fmt.Sprintf("The language server for %s could not start: %v", filepath.Base(path), err)}
	}
	if _, open := l.s.ws.Overlay.Get(path); open {
		l.mu.Lock()
		v := l.versions[path]
		l.mu.Unlock()
		return srv, v, nil
	}
	l.mu.Lock()
	v, known := l.versions[path]
	st, had := l.disk[path]
	l.mu.Unlock()
	now := stampOf(path)
	if !known || !had || st != now {
		v = mgr.Wrote(path)
		l.mu.Lock()
		l.versions[path], l.disk[path] = v, now
		l.mu.Unlock()
	}
	return srv, v, nil
}

// conv converts for srv.
func (l *langServers) conv(srv *langserver.Server) *lspConv {
	ps := l.s.ws.Paths
	toURI := func(p string) string { return ps.PathFlavor().URIFromPath(ps.FromNative(p), workspace.URIForm{}) }
	return l.s.newConv(srv.PositionEncoding(), srv.Name(), toURI, l.s.uriToPath)
}

// prepare checks that servers may run and gives the manager the overlay.
func (l *langServers) prepare() (*langserver.Manager, error) {
	if err := l.allowed(); err != nil {
		return nil, err
	}
	mgr, err := l.manager()
	if err != nil {
		return nil, err
	}
	l.syncOverlay(mgr)
	return mgr, nil
}

// query answers q with a language server qwen-ls starts.
func (l *langServers) query(ctx context.Context, q codeintel.Query) (codeintel.Answer, error) {
	mgr, err := l.prepare()
	if err != nil {
		return codeintel.Answer{}, err
	}
	if q.Op == codeintel.WorkspaceSymbol {
		return l.workspaceSymbols(ctx, mgr, q)
	}
	path := q.Path
	if q.Item != nil {
		path = q.Item.Path
	}
	srv, _, err := l.serverFor(ctx, mgr, path)
	if err != nil {
		return codeintel.Answer{}, err
	}
	conv := l.conv(srv)
	method, params, err := conv.request(q)
	if err != nil {
		return codeintel.Answer{}, err
	}
	raw, err := srv.Call(ctx, method, params)
	if err != nil {
		return codeintel.Answer{}, err
	}
	return conv.answer(q, raw)
}

// workspaceServers are the running servers for the roots; when none runs,
// the server of the files the roots hold most of is started.
func (l *langServers) workspaceServers(ctx context.Context, mgr *langserver.Manager) ([]*langserver.Server, error) {
	var out []*langserver.Server
	for _, srv := range mgr.Servers() {
		if l.s.ws.Roots.LexicallyInside(srv.Root()) {
			out = append(out, srv)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	specs, _ := l.specs()
	file := l.representativeFile(specs)
	if file == "" {
		return nil, &codeintel.UnavailableError{Message: "No language server covers the files of the workspace, or none is installed for them. " +
			"qwen-ls knows gopls, typescript-language-server, pyright or pylsp, rust-analyzer and clangd; another is added in the settings under \"lsp\"."}
	}
	srv, _, err := l.serverFor(ctx, mgr, file)
	if err != nil {
		return nil, err
	}
	return []*langserver.Server{srv}, nil
}

// representativeFile is a file of the roots that an installed server
// covers: an open buffer, else the file of the language the index holds
// most files of.
func (l *langServers) representativeFile(specs []langserver.Spec) string {
	installed := func(p string) (string, bool) {
		for _, f := range langserver.Lookup(specs, p) {
			if f.Path != "" {
				return f.Spec.Name, true
			}
		}
		return "", false
	}
	for _, p := range l.s.ws.Overlay.Paths() {
		if _, ok := installed(p); ok && l.s.ws.Roots.LexicallyInside(p) {
			return p
		}
	}
	counts, first := map[string]int{}, map[string]string{}
	seen := 0
	l.s.ws.Index.Walk(func(fe workspace.FileEntry) bool {
		seen++
		if name, ok := installed(fe.Path); ok {
			counts[name]++
			if first[name] == "" {
				first[name] = fe.Path
			}
		}
		return seen < 20000
	})
	best := ""
	for name, n := range counts {
		if best == "" || n > counts[best] || n == counts[best] && name < best {
			best = name
		}
	}
	return first[best]
}

func (l *langServers) workspaceSymbols(ctx context.Context, mgr *langserver.Manager, q codeintel.Query) (codeintel.Answer, error) {
	servers, err := l.workspaceServers(ctx, mgr)
	if err != nil {
		return codeintel.Answer{}, err
	}
	var out codeintel.Answer
	var names []string
	for _, srv := range servers {
		conv := l.conv(srv)
		method, params, _ := conv.request(q)
		raw, err := srv.Call(ctx, method, params)
		if err != nil {
			return codeintel.Answer{}, err
		}
		a, err := conv.answer(q, raw)
		if err != nil {
			return codeintel.Answer{}, err
		}
		out.Symbols = append(out.Symbols, a.Symbols...)
		names = append(names, srv.Name())
	}
	out.Server = strings.Join(names, ", ")
	return out, nil
}

// diagnostics answers q with a language server qwen-ls starts.
func (l *langServers) diagnostics(ctx context.Context, q codeintel.DiagnosticsQuery) (codeintel.Report, error) {
	mgr, err := l.prepare()
	if err != nil {
		return codeintel.Report{}, err
	}
	if q.Path == "" {
		return l.workspaceDiagnostics(ctx, mgr)
	}
	specs, _ := l.specs()
	found := langserver.Lookup(specs, q.Path)
	name := ""
	for _, f := range found {
		if f.Path != "" {
			name = f.Spec.Name
			break
		}
	}
	if name == "" {
		var missing []langserver.Spec
		for _, f := range found {
			missing = append(missing, f.Spec)
		}
		return codeintel.Report{}, &codeintel.UnavailableError{Message: noServerMessage(specs, &langserver.NoServerError{Path: q.Path, Missing: missing})}
	}
	if _, err := l.s.ws.ReadText(q.Path); err != nil {
		// Not there yet (a file about to be created): nothing to report.
		return codeintel.Report{Server: name, Files: []codeintel.FileDiagnostics{{Path: q.Path}}}, nil
	}
	srv, v, err := l.serverFor(ctx, mgr, q.Path)
	if err != nil {
		return codeintel.Report{}, err
	}
	rep := codeintel.Report{Server: srv.Name()}
	var pub langserver.Published
	if q.Fresh {
		start := time.Now()
		var fresh bool
		pub, fresh, err = srv.WaitDiagnostics(ctx, q.Path, v, q.Wait)
		if err != nil {
			return codeintel.Report{}, err
		}
		rep.Stale = !fresh
		if fresh && time.Since(start) > time.Millisecond {
			// A report that just came may be followed by more for the
			// same text (a server checks in passes) and by the reports
			// on other files; one that was there already is complete.
			l.settle(ctx, srv)
			pub, _ = srv.Diagnostics(q.Path)
		}
	} else {
		pub, _ = srv.Diagnostics(q.Path)
	}
	conv := l.conv(srv)
	rep.Files = append(rep.Files, codeintel.FileDiagnostics{Path: q.Path, Diagnostics: conv.diagnostics(q.Path, pub.Diagnostics)})
	if q.Others {
		rep.Files = append(rep.Files, l.published(conv, srv, q.Path)...)
	}
	return rep, nil
}

// published converts what srv last published for every file but skip.
func (l *langServers) published(conv *lspConv, srv *langserver.Server, skip string) []codeintel.FileDiagnostics {
	var out []codeintel.FileDiagnostics
	for _, p := range srv.AllDiagnostics() {
		path, err := l.s.uriToPath(p.URI)
		if err != nil || path == skip {
			continue
		}
		if ds := conv.diagnostics(path, p.Diagnostics); len(ds) > 0 {
			out = append(out, codeintel.FileDiagnostics{Path: path, Diagnostics: ds})
		}
	}
	return out
}

// settle waits, at most a second, until srv has published nothing new for
// settleQuiet: the reports on a change's importers follow the one on the
// changed file.
func (l *langServers) settle(ctx context.Context, srv *langserver.Server) {
	fingerprint := func() string {
		var b strings.Builder
		for _, p := range srv.AllDiagnostics() {
			fmt.Fprintf(&b, "%s %d %d\n", p.URI, p.Version, len(p.Diagnostics))
		}
		return b.String()
	}
	last, quietSince := fingerprint(), time.Now()
	deadline := time.Now().Add(time.Second)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) && time.Since(quietSince) < settleQuiet {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if fp := fingerprint(); fp != last {
			last, quietSince = fp, time.Now()
		}
	}
}

// workspaceDiagnostics is what the running servers last published; a
// server started for the question gets a moment to report.
func (l *langServers) workspaceDiagnostics(ctx context.Context, mgr *langserver.Manager) (codeintel.Report, error) {
	started := len(mgr.Servers()) == 0
	servers, err := l.workspaceServers(ctx, mgr)
	if err != nil {
		return codeintel.Report{}, err
	}
	var rep codeintel.Report
	var names []string
	for _, srv := range servers {
		if started {
			l.settle(ctx, srv)
		}
		rep.Files = append(rep.Files, l.published(l.conv(srv), srv, "")...)
		names = append(names, srv.Name())
	}
	rep.Server = strings.Join(names, ", ")
	return rep, nil
}

// setupInfo is what qwen/checkSetup says of the language servers: those
// qwen-ls knows, whether each is installed and covers uri's file, and
// whether it may start them here.
func (l *langServers) setupInfo(uri string) ([]session.LanguageServer, bool) {
	path := ""
	if uri != "" {
		path, _ = l.s.uriToPath(uri)
	}
	specs, _ := l.specs()
	out := make([]session.LanguageServer, 0, len(specs))
	for _, sp := range specs {
		ls := session.LanguageServer{Name: sp.Name, Command: strings.Join(sp.Command, " ")}
		for _, id := range sp.Extensions {
			if !slices.Contains(ls.Languages, id) {
				ls.Languages = append(ls.Languages, id)
			}
		}
		slices.Sort(ls.Languages)
		_, err := sp.LookPath()
		ls.Installed = err == nil
		if path != "" {
			_, ls.ForFile = sp.Covers(path)
		}
		out = append(out, ls)
	}
	return out, l.allowed() == nil
}

// noteDisk passes a change the file watcher saw to the servers that have
// the file from the disk. It runs on the watcher's goroutine, so the work
// goes on one of its own.
func (l *langServers) noteDisk(path string) {
	l.mu.Lock()
	_, tracked := l.disk[path]
	l.mu.Unlock()
	if tracked {
		go l.wrote(path)
	}
}

// coveredByAny reports whether one of specs covers path.
func coveredByAny(specs []langserver.Spec, path string) bool {
	for _, sp := range specs {
		if _, ok := sp.Covers(path); ok {
			return true
		}
	}
	return false
}
