package rpc

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// uriBook converts between the client's file URIs and the workspace's
// paths by the workspace's path flavour, and remembers how the client
// spelled the URI of each document and folder it named, so that the URIs
// the server sends back (workspace/applyEdit, window/showDocument) read
// exactly like the client's own: VS Code's "file:///c%3A/..." to VS Code,
// Neovim's "file:///C:/..." to Neovim.
type uriBook struct {
	mu sync.Mutex
	// exact maps the key of a path (PathFlavor.Key) to the URI the client
	// named it with.
	exact map[string]string
	// last is the form of the latest URI, for paths the client never
	// named nor named a folder of.
	last workspace.URIForm
}

// maxRememberedURIs bounds the book; past it new URIs are still converted,
// only their spelling is derived from a folder's.
const maxRememberedURIs = 10000

// uriToPath converts a file:// URI to a clean absolute path on this
// system. Other schemes (untitled:, git:) have no path on disk, so they
// are reported as errors and their documents are not tracked.
func (s *Server) uriToPath(u string) (string, error) {
	ps := s.ws.Paths
	p, err := ps.PathFlavor().PathFromURI(u)
	if err != nil {
		return "", err
	}
	return ps.ToNative(p)
}

// noteClientURIs remembers the spelling of the URIs that params name a
// document or a folder with (didOpen, initialize, the folders added by
// didChangeWorkspaceFolders). It reads the raw params: the LSP types the
// handlers decode into rewrite every URI into VS Code's form, which is not
// what Neovim sent.
func (s *Server) noteClientURIs(params json.RawMessage) {
	var p struct {
		TextDocument struct {
			URI string `json:"uri"`
		} `json:"textDocument"`
		WorkspaceFolders []struct {
			URI string `json:"uri"`
		} `json:"workspaceFolders"`
		RootURI string `json:"rootUri"`
		Event   struct {
			Added []struct {
				URI string `json:"uri"`
			} `json:"added"`
		} `json:"event"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	uris := []string{p.RootURI, p.TextDocument.URI}
	for _, f := range p.WorkspaceFolders {
		uris = append(uris, f.URI)
	}
	for _, f := range p.Event.Added {
		uris = append(uris, f.URI)
	}
	for _, u := range uris {
		if u == "" {
			continue
		}
		if path, err := s.uriToPath(u); err == nil {
			s.uris.remember(s.ws.Roots.Flavor().Key(path), u)
		}
	}
}

// pathToURI converts an absolute path on this system to a file:// URI in
// the client's spelling: the URI it named the path with, else the path
// below the nearest folder it named, else the path in the form of the
// client's latest URI.
func (s *Server) pathToURI(p string) string {
	cmp := s.ws.Roots.Flavor()
	b := &s.uris
	b.mu.Lock()
	defer b.mu.Unlock()
	if u, ok := b.exact[cmp.Key(p)]; ok {
		return u
	}
	for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
		if u, ok := b.exact[cmp.Key(dir)]; ok {
			if rel, ok := cmp.Rel(dir, p); ok && rel != "." {
				return joinURI(u, rel, workspace.FormOf(u).EscapeAll)
			}
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	ps := s.ws.Paths
	return ps.PathFlavor().URIFromPath(ps.FromNative(p), b.last)
}

func (b *uriBook) remember(key, u string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = workspace.FormOf(u)
	if b.exact == nil {
		b.exact = map[string]string{}
	}
	if _, ok := b.exact[key]; ok || len(b.exact) < maxRememberedURIs {
		b.exact[key] = u
	}
}

// joinURI appends the native relative path rel to the folder URI base,
// escaping each name as base is escaped.
func joinURI(base, rel string, escapeAll bool) string {
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(base, "/"))
	for _, name := range strings.Split(filepath.ToSlash(rel), "/") {
		b.WriteByte('/')
		if escapeAll {
			b.WriteString(workspace.EscapeURIName(name))
		} else {
			b.WriteString((&url.URL{Path: name}).EscapedPath())
		}
	}
	return b.String()
}
