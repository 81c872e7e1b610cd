package workspace

import (
	"fmt"
	"net/url"
	"strings"
)

// URIForm is how a client spells file URIs, so that a URI the server makes
// for a path reads like the ones the client sends. VS Code writes
// "file:///c%3A/Users/me/a.go" (the drive in lower case, its colon and
// every other byte beyond letters, digits, "-._~" and "/" escaped); Neovim
// writes "file:///C:/Users/me/a.go" (RFC 8089, the colon kept).
type URIForm struct {
	// EscapeAll escapes every byte but letters, digits, "-._~" and "/",
	// the colon of a drive included.
	EscapeAll bool
	// LowerDrive writes the drive letter in lower case.
	LowerDrive bool
}

// FormOf tells the form of a file URI that a client sent.
func FormOf(uri string) URIForm {
	var form URIForm
	rest, ok := cutFileScheme(uri)
	if !ok {
		return form
	}
	// After the authority, "/c%3A/" or "/C:/" names a drive.
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[i+1:]
	} else {
		return form
	}
	if len(rest) >= 2 && isLetter(rest[0]) {
		switch {
		case strings.HasPrefix(strings.ToUpper(rest[1:]), "%3A"):
			form.EscapeAll = true
			form.LowerDrive = rest[0] >= 'a'
		case rest[1] == ':':
			form.LowerDrive = rest[0] >= 'a'
		}
	}
	if !form.EscapeAll {
		// Without a drive, a colon or another sub-delimiter escaped
		// where it need not be tells VS Code's form too.
		for _, esc := range []string{"%3A", "%3a", "%40", "%2B", "%2b", "%3D", "%3d", "%2C", "%2c"} {
			if strings.Contains(rest, esc) {
				form.EscapeAll = true
				break
			}
		}
	}
	return form
}

// cutFileScheme returns what follows "file://" (any case); ok is false for
// another scheme.
func cutFileScheme(uri string) (rest string, ok bool) {
	const scheme = "file://"
	if len(uri) < len(scheme) || !strings.EqualFold(uri[:len(scheme)], scheme) {
		return "", false
	}
	return uri[len(scheme):], true
}

// PathFromURI converts a file URI to an absolute path in f's form: on
// Windows "file:///c%3A/x" and "file:///C:/x" both give `C:\x` (the drive
// in upper case, as Windows shows it), and "file://server/share/x" gives
// `\\server\share\x`. Other schemes (untitled:, git:) name nothing on disk
// and are refused, as are remote hosts on Unix and paths that are not
// absolute.
func (f PathFlavor) PathFromURI(uri string) (string, error) {
	parsed, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("parse uri %q: %w", uri, err)
	}
	if !strings.EqualFold(parsed.Scheme, "file") {
		return "", fmt.Errorf("uri %q: only file:// URIs name files", uri)
	}
	host := parsed.Host
	if strings.EqualFold(host, "localhost") {
		host = ""
	}
	p := parsed.Path
	if !f.Drives {
		if host != "" {
			return "", fmt.Errorf("uri %q: remote hosts are not supported", uri)
		}
		if !strings.HasPrefix(p, "/") {
			return "", fmt.Errorf("uri %q: the path is not absolute", uri)
		}
		return f.Clean(p), nil
	}
	if host != "" {
		// A UNC share: file://server/share/dir.
		unc := `\\` + host + f.FromSlash(p)
		if f.Volume(unc) == "" {
			return "", fmt.Errorf("uri %q: a UNC path needs a share name", uri)
		}
		return f.Clean(unc), nil
	}
	// "/C:/x" is the drive path "C:/x".
	if len(p) >= 3 && p[0] == '/' && isLetter(p[1]) && p[2] == ':' {
		p = p[1:]
	}
	if !f.IsAbs(p) || f.Volume(p) == "" {
		return "", fmt.Errorf("uri %q: the path is not absolute (a Windows path starts with a drive or a UNC share)", uri)
	}
	if p[1] == ':' {
		p = strings.ToUpper(p[:1]) + p[1:]
	}
	return f.Clean(p), nil
}

// URIFromPath converts an absolute path in f's form to a file URI in the
// given form.
func (f PathFlavor) URIFromPath(p string, form URIForm) string {
	p = f.Clean(p)
	host, slash := "", p
	if f.Drives {
		vol := f.Volume(p)
		switch {
		case vol != "" && vol[1] == ':':
			d := vol[:1]
			if form.LowerDrive {
				d = strings.ToLower(d)
			} else {
				d = strings.ToUpper(d)
			}
			slash = "/" + d + ":" + strings.ReplaceAll(p[2:], `\`, "/")
		case vol != "":
			server, share, _ := strings.Cut(vol[2:], `\`)
			host = server
			slash = "/" + share + strings.ReplaceAll(p[len(vol):], `\`, "/")
		default:
			slash = strings.ReplaceAll(p, `\`, "/")
		}
	}
	if !form.EscapeAll {
		return (&url.URL{Scheme: "file", Host: host, Path: slash}).String()
	}
	return "file://" + host + escapeAll(slash)
}

// EscapeURIName escapes one name of a path as VS Code's URIs do (see
// URIForm.EscapeAll).
func EscapeURIName(name string) string { return escapeAll(name) }

// escapeAll percent-encodes every byte of p but letters, digits, "-._~"
// and "/", as VS Code's URIs do.
func escapeAll(p string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if isLetter(c) || c >= '0' && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
