package rpc

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// uriToPath converts a file:// URI to a clean absolute path. Other schemes
// (untitled:, git:) have no path on disk, so they are reported as errors and
// their documents are not tracked.
func uriToPath(u string) (string, error) {
	parsed, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("parse uri %q: %w", u, err)
	}
	if parsed.Scheme != "file" {
		return "", fmt.Errorf("uri %q: only file:// URIs name files", u)
	}
	if parsed.Host != "" && parsed.Host != "localhost" {
		return "", fmt.Errorf("uri %q: remote hosts are not supported", u)
	}
	p := parsed.Path
	if p == "" || !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("uri %q: the path is not absolute", u)
	}
	return filepath.Clean(p), nil
}

// pathToURI converts an absolute path to a file:// URI, escaping what must
// be escaped.
func pathToURI(p string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String()
}
