package langserver

import (
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
)

// fileURI is the file: URI of the clean absolute path p.
func fileURI(p string) string {
	s := filepath.ToSlash(p)
	if !strings.HasPrefix(s, "/") {
		s = "/" + s // C:/x → /C:/x
	}
	return (&url.URL{Scheme: "file", Path: s}).String()
}

// uriPath is the clean path of a file: URI, whatever its escaping (a
// drive letter's colon may come as %3A), so that paths, not spellings,
// identify documents.
func uriPath(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", err
	}
	if u.Scheme != "file" {
		return "", fmt.Errorf("%s is not a file: URI", uri)
	}
	p := u.Path
	if runtime.GOOS == "windows" {
		p = strings.TrimPrefix(p, "/")
		if len(p) >= 2 && p[1] == ':' {
			p = strings.ToUpper(p[:1]) + p[1:]
		}
		if u.Host != "" {
			p = `\\` + u.Host + "/" + p
		}
	}
	return filepath.Clean(filepath.FromSlash(p)), nil
}

// docKey is what identifies a document given by URI or by path: its
// clean path, or the URI itself when it is not a file.
func docKey(uriOrPath string) string {
	if strings.Contains(uriOrPath, "://") || strings.HasPrefix(uriOrPath, "file:") {
		if p, err := uriPath(uriOrPath); err == nil {
			return p
		}
		return uriOrPath
	}
	return filepath.Clean(uriOrPath)
}
