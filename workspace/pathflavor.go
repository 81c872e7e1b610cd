package workspace

import (
	"path"
	"runtime"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// PathFlavor is how one operating system spells and compares paths: its
// separators and volumes (drive letters and UNC shares on Windows) and
// whether its usual file system tells names apart by case (Windows' NTFS
// and macOS's default APFS do not). The path rules of the workspace take a
// flavour as a value, so that every flavour's rules run and are tested on
// every machine; the running system's flavour is NativePaths.
type PathFlavor struct {
	// Name is "windows", "darwin" or "linux".
	Name string
	// Drives selects Windows syntax: `\` and `/` both separate, a path
	// starts with a drive ("C:") or a UNC share (`\\server\share`), and
	// `\` is what paths are shown with.
	Drives bool
	// CaseInsensitive says that two names differing only in case name one
	// file.
	CaseInsensitive bool
	// Unicode says that names are compared after Unicode normalisation
	// (APFS: "é" as one code point or as "e" and an accent is one name).
	Unicode bool
}

// The flavours of the systems qwen-ls runs on.
var (
	WindowsPaths = PathFlavor{Name: "windows", Drives: true, CaseInsensitive: true}
	DarwinPaths  = PathFlavor{Name: "darwin", CaseInsensitive: true, Unicode: true}
	LinuxPaths   = PathFlavor{Name: "linux"}
)

// NativePaths is the flavour of the running system.
func NativePaths() PathFlavor { return flavorOf(runtime.GOOS) }

func flavorOf(goos string) PathFlavor {
	switch goos {
	case "windows":
		return WindowsPaths
	case "darwin", "ios":
		return DarwinPaths
	}
	return LinuxPaths
}

// OnNative is f's way of comparing names with the running system's
// syntax: what a workspace that plays another system's file system on
// this one (a test) compares its native paths with. On the system f
// describes it is f itself.
func (f PathFlavor) OnNative() PathFlavor {
	n := NativePaths()
	n.Name, n.CaseInsensitive, n.Unicode = f.Name, f.CaseInsensitive, f.Unicode
	return n
}

// Sep is the separator paths are shown with.
func (f PathFlavor) Sep() byte {
	if f.Drives {
		return '\\'
	}
	return '/'
}

func (f PathFlavor) isSep(c byte) bool {
	return c == '/' || f.Drives && c == '\\'
}

// CRLF reports whether text files on this system end lines with "\r\n" by
// default (Windows).
func (f PathFlavor) CRLF() bool { return f.Drives }

// Volume returns the volume that starts p: "C:" for a drive, `\\server\share`
// for a UNC path (with p's separators turned into `\`), "" otherwise and on
// systems without volumes.
func (f PathFlavor) Volume(p string) string {
	if !f.Drives {
		return ""
	}
	if len(p) >= 2 && p[1] == ':' && isLetter(p[0]) {
		return p[:2]
	}
	if len(p) >= 2 && f.isSep(p[0]) && f.isSep(p[1]) {
		// \\server\share: two names after the double separator.
		rest := p[2:]
		i := strings.IndexFunc(rest, func(r rune) bool { return r == '/' || r == '\\' })
		if i <= 0 {
			return ""
		}
		server, rest := rest[:i], rest[i+1:]
		j := strings.IndexFunc(rest, func(r rune) bool { return r == '/' || r == '\\' })
		if j < 0 {
			j = len(rest)
		}
		if j == 0 || server == "?" || server == "." {
			return ""
		}
		return `\\` + server + `\` + rest[:j]
	}
	return ""
}

// volumeLen is how many bytes of p its volume takes.
func (f PathFlavor) volumeLen(p string) int {
	// A UNC volume written with '/' has the length of its `\` form.
	return len(f.Volume(p))
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// IsAbs reports whether p is absolute: "/..." on Unix; a drive followed
// by a separator, or a UNC path, on Windows.
func (f PathFlavor) IsAbs(p string) bool {
	if !f.Drives {
		return strings.HasPrefix(p, "/")
	}
	v := f.Volume(p)
	switch {
	case v == "":
		return false
	case v[1] == ':':
		return len(p) > 2 && f.isSep(p[2])
	}
	return true
}

// Clean is filepath.Clean by f's rules: on Windows both separators are
// read and `\` is written, and the volume is kept as it is.
func (f PathFlavor) Clean(p string) string {
	if !f.Drives {
		return path.Clean(p)
	}
	n := f.volumeLen(p)
	vol, rest := f.Volume(p), strings.ReplaceAll(p[n:], `\`, "/")
	c := path.Clean(rest)
	if vol != "" && rest == "" {
		c = ""
		if vol[1] == ':' {
			c = "."
		}
	}
	return vol + strings.ReplaceAll(c, "/", `\`)
}

// Join joins elements with f's separator and cleans the result.
func (f PathFlavor) Join(elem ...string) string {
	var parts []string
	for _, e := range elem {
		if e != "" {
			parts = append(parts, e)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return f.Clean(strings.Join(parts, string(f.Sep())))
}

// Key is the name under which f's file system knows p: cleaned, and where
// case does not tell names apart, in one case (and, on macOS, in one
// Unicode normal form). Two paths with one key are one file; maps of open
// buffers and remembered URIs are keyed by it.
func (f PathFlavor) Key(p string) string {
	k := f.Clean(p)
	if f.Unicode {
		k = norm.NFC.String(k)
	}
	if f.CaseInsensitive {
		k = foldCase(k)
	}
	return k
}

// foldCase maps s to one case. NTFS compares names by upper-casing each
// character; lowering the upper case gives the same classes in a form that
// reads naturally.
func foldCase(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	return strings.ToLower(strings.ToUpper(s))
}

// Same reports whether a and b name one file by f's rules.
func (f PathFlavor) Same(a, b string) bool { return f.Key(a) == f.Key(b) }

// Within reports whether p is root or lies below it by f's rules. A sibling
// that merely shares the root as a string prefix ("/tmp/ab" for "/tmp/a")
// is not below it.
func (f PathFlavor) Within(root, p string) bool {
	kr, kp := f.Key(root), f.Key(p)
	if kp == kr {
		return true
	}
	if kr != "" && f.isSep(kr[len(kr)-1]) { // "/" or `C:\`
		return strings.HasPrefix(kp, kr)
	}
	return strings.HasPrefix(kp, kr+string(f.Sep()))
}

// Rel returns p relative to root, which must contain it (Within), spelled
// as p spells it: on a case-insensitive system "C:\Proj" and
// "c:\proj\A.txt" give "A.txt".
func (f PathFlavor) Rel(root, p string) (string, bool) {
	if !f.Within(root, p) {
		return "", false
	}
	cr, cp := f.Clean(root), f.Clean(p)
	skip := len(f.components(cr))
	parts := f.components(cp)
	if skip > len(parts) {
		return "", false
	}
	rel := strings.Join(parts[skip:], string(f.Sep()))
	if rel == "" {
		return ".", true
	}
	return rel, true
}

// components splits a clean path into its volume-and-root part and its
// names.
func (f PathFlavor) components(clean string) []string {
	n := f.volumeLen(clean)
	head, rest := clean[:n], clean[n:]
	if rest != "" && f.isSep(rest[0]) {
		head, rest = head+rest[:1], rest[1:]
	}
	out := []string{head}
	if rest != "" && rest != "." {
		out = append(out, strings.FieldsFunc(rest, func(r rune) bool { return r < 0x80 && f.isSep(byte(r)) })...)
	}
	return out
}

// FromSlash turns a '/'-separated relative path into f's form.
func (f PathFlavor) FromSlash(p string) string {
	if f.Drives {
		return strings.ReplaceAll(p, "/", `\`)
	}
	return p
}
