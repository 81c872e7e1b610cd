package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SeatbeltPath is macOS's sandbox-exec, which applies a profile given
// with -p to the program it runs.
const SeatbeltPath = "/usr/bin/sandbox-exec"

// seatbeltBase is what every confined command needs to run at all:
// starting programs, its own processes, reading system information, the
// system services a process looks up at start, and terminals. The
// arguments and environment of other processes (kern.procargs and
// kern.procargs2) stay out of reach: they hold the server's keys, as
// /proc/PID/environ does on Linux.
const seatbeltBase = `(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(deny sysctl-read (sysctl-name-prefix "kern.procargs"))
(allow mach-lookup)
(allow ipc-posix-shm-read-data)
(allow ipc-posix-sem)
(allow pseudo-tty)
(allow file-ioctl (literal "/dev/null") (literal "/dev/tty") (literal "/dev/ptmx") (regex "^/dev/ttys[0-9]+$"))
`

// seatbeltDevices are the devices every confined command may read and
// write (the null and zero devices, its terminal), the random devices it
// reads, and its own descriptors under /dev/fd, which macOS opens as
// copies with no more rights than the original.
const seatbeltDevices = `(allow file-read* file-write-data (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty") (literal "/dev/ptmx") (regex "^/dev/ttys[0-9]+$"))
(allow file-read* (literal "/dev/random") (literal "/dev/urandom"))
(allow file-read-data file-write-data (subpath "/dev/fd"))
`

// SeatbeltProfile is the Seatbelt profile text of p, with the rules of
// the Linux sandbox:
//
//   - every confined mode starts from (deny default); reads by
//     allow-list (p.Readable, the writable folders, the devices; the
//     metadata of any path, so that path walks work); the network as
//     the mode says: none at all for read-only, Unix sockets for
//     workspace-write, everything for protect;
//   - protect and workspace-write write under p.Writable and p.TempDir,
//     except the protected class of p.Class, whose rules come after
//     those allows so that they win (in Seatbelt the last matching rule
//     does);
//   - none starts from (allow default).
//
// Every mode ends with the denial of p.AlwaysProtected. Seatbelt matches
// the path with links resolved (/private/var for /var), so each path is
// given as written and resolved.
func SeatbeltProfile(p Policy) string {
	var b strings.Builder
	b.WriteString("(version 1)\n")
	if p.Mode == None {
		b.WriteString("(allow default)\n")
		writeAlwaysProtected(&b, p.AlwaysProtected)
		return b.String()
	}
	b.WriteString("(deny default)\n")
	b.WriteString(seatbeltBase)
	switch p.Mode {
	case Protect:
		b.WriteString("(allow network*)\n(allow system-socket)\n")
	case WorkspaceWrite:
		// Unix sockets only: creating one, binding it to a path,
		// accepting on it, connecting to one by its path. No TCP or
		// UDP: those need network-outbound to an address, which
		// nothing allows.
		b.WriteString("(allow system-socket (socket-domain AF_UNIX))\n")
		b.WriteString(`(allow network-bind network-inbound (local unix-socket (path-regex "^/")))` + "\n")
		b.WriteString(`(allow network-outbound (remote unix-socket (path-regex "^/")))` + "\n")
	}
	// Read-only: (deny default) already refuses every socket.

	// Reads. The metadata of any path (stat, access) stays readable, as
	// on Linux, where Landlock does not handle it: realpath and the
	// toolchains' path walks cross folders that are not readable.
	b.WriteString("(allow file-read-metadata file-test-existence)\n")
	var writable []string
	if p.Mode.Writes() {
		for _, w := range append(append([]string(nil), p.Writable...), p.TempDir) {
			writable = appendNew(writable, sbPaths(w)...)
		}
	}
	if len(p.Readable) == 0 {
		b.WriteString("(allow file-read* file-map-executable)\n")
	} else {
		var filters []string
		for _, r := range p.Readable {
			for _, s := range sbPaths(r) {
				filters = appendNew(filters, readFilter(s))
			}
		}
		for _, w := range writable {
			filters = appendNew(filters, "(subpath "+sbString(w)+")")
		}
		if len(filters) > 0 {
			// file-map-executable: libraries outside the shared cache
			// (Homebrew's, a toolchain's, a build's) are mapped with it.
			b.WriteString("(allow file-read* file-map-executable " + strings.Join(filters, " ") + ")\n")
		}
		// The root folder itself: getcwd and the C library's path
		// functions read it.
		b.WriteString(`(allow file-read* (literal "/"))` + "\n")
	}
	b.WriteString(seatbeltDevices)

	// Writes.
	if len(writable) > 0 {
		var filters []string
		for _, w := range writable {
			filters = append(filters, "(subpath "+sbString(w)+")")
		}
		// file-link: a hard link is checked on its own; one made here
		// of a file from outside would let that file be written.
		b.WriteString("(allow file-write* file-link " + strings.Join(filters, " ") + ")\n")
		writeClass(&b, p.Class, writable)
	}
	writeAlwaysProtected(&b, p.AlwaysProtected)
	return b.String()
}

// writeAlwaysProtected denies writing the paths (and linking them, which
// would give them a second, writable name), as the last rule.
func writeAlwaysProtected(b *strings.Builder, paths []string) {
	var filters []string
	for _, path := range paths {
		for _, s := range sbPaths(path) {
			filters = appendNew(filters, "(subpath "+sbString(s)+")")
		}
	}
	if len(filters) > 0 {
		b.WriteString("(deny file-write* file-link " + strings.Join(filters, " ") + ")\n")
	}
}

// seatbeltClassOps are the operations the class rules allow and deny:
// every kind of write (create, write, rename, remove, change the mode or
// the extended attributes) and hard links.
const seatbeltClassOps = "file-write* file-link"

// writeClass writes the rules of the protected class c, after the write
// allow-list. Seatbelt has no "except" inside a rule, so each git
// directory gets three: deny everything in it, allow what git's own
// commands write, deny the exceptions inside those (objects/info, and
// the few names the allowed patterns match but Class does not). The
// rules are ordered so that the last one matching a path gives Class's
// verdict:
//
//   - hook folders first: a git directory's own verdict comes after and
//     wins, as in Class.Protected;
//   - each root's git triple, the first root last (Class uses the first
//     root that holds the path);
//   - the other kinds, which match only paths with no .git part below
//     the root, since Class decides those by the git rules alone;
//   - the git directories .git files name, the first last, since Class
//     decides by them before anything else.
//
// Names are matched in any case, as Class does: a case-insensitive file
// system opens .GIT as .git. The names inside a git directory are as git
// writes them (Class matches them exactly), except objects/info, which
// is denied in any case. A directory outside the write allow-list gets
// only its denial: the allows would otherwise reach outside the list.
func writeClass(b *strings.Builder, c Class, writable []string) {
	deny := func(regexes ...string) { writeRegexRule(b, "deny", regexes) }
	allow := func(regexes ...string) { writeRegexRule(b, "allow", regexes) }
	inWritable := func(dir string) bool {
		return slices.ContainsFunc(writable, func(w string) bool { return within(dir, w) })
	}
	gitTriple := func(prefix string, writes bool) {
		deny(prefix+"$", prefix+"/")
		if !writes {
			return
		}
		allow(gitAllowRegexes(prefix)...)
		deny(gitExceptionRegexes(prefix)...)
	}

	var hooks []string
	for _, h := range c.HookDirs {
		for _, s := range sbPaths(h) {
			hooks = appendNew(hooks, "(subpath "+sbString(s)+")")
		}
	}
	if len(hooks) > 0 {
		b.WriteString("(deny " + seatbeltClassOps + " " + strings.Join(hooks, " ") + ")\n")
	}

	// The other kinds: folders by name anywhere, files by name as the
	// last part.
	var dirNames, fileNames []string
	for n := range protectedDirNames {
		if n != ".git" {
			dirNames = append(dirNames, n)
		}
	}
	for n := range protectedFileNames {
		fileNames = append(fileNames, n)
	}
	for _, m := range c.memoryNames() {
		// Class compares one part with the name: a name with a slash
		// never matches.
		if m != "" && !strings.Contains(m, "/") {
			fileNames = append(fileNames, m)
		}
	}
	sort.Strings(dirNames)
	sort.Strings(fileNames)
	dirs := foldAlternatives(dirNames)
	files := foldAlternatives(fileNames)

	// Each root's .git folders: the parts from the root to the first
	// .git part, then that part.
	var roots []string
	for _, root := range slices.Backward(c.Roots) {
		roots = appendNew(roots, sbPaths(root)...)
	}
	noGit := "(" + notGitPart + "/)*"
	for _, r := range roots {
		gitTriple(rootRegex(r)+noGit+foldRegex(".git"), inWritable(r))
	}
	for _, r := range roots {
		above := rootRegex(r) + noGit
		deny(above+dirs+"(/"+notGitPart+")*$", above+files+"$")
	}
	for _, g := range slices.Backward(c.GitDirs) {
		for _, s := range sbPaths(g) {
			if s != "/" {
				gitTriple("^"+ereQuote(s), inWritable(s))
			}
		}
	}
}

// gitAllowRegexes are what git's commands write inside the git directory
// whose regex is prefix (gitWritable): the names at its top, each with
// ".lock", the temporary index files, and the folders objects, refs,
// logs, rr-cache and lfs with everything in them.
func gitAllowRegexes(prefix string) []string {
	return []string{
		prefix + "/" + alternatives(gitTopWritable) + `(\.lock)?$`,
		prefix + "/" + alternatives(gitTopWritablePrefixes) + "[^/]*$",
		prefix + "/" + alternatives(gitWritableDirs) + "$",
		prefix + "/" + alternatives(gitWritableDirs) + "/",
	}
}

// gitExceptionRegexes are what gitAllowRegexes match but git's commands
// do not write: objects/info (alternates, which points git at other
// repositories), in any case, and a temporary index prefix followed only
// by what makes it a lock of a shorter name ("sharedindex.lock" is the
// lock of "sharedindex", which is not written).
func gitExceptionRegexes(prefix string) []string {
	info := prefix + "/objects/" + foldRegex("info")
	out := []string{info + "$", info + "/"}
	var locks []string
	for _, pfx := range gitTopWritablePrefixes {
		for k := 0; k < len(".lock"); k++ {
			name := pfx + ".lock"[len(".lock")-k:]
			if strings.HasSuffix(name, ".lock") && !gitWritable(name) {
				locks = appendNew(locks, name)
			}
		}
	}
	if len(locks) > 0 {
		out = append(out, prefix+"/"+alternatives(locks)+"$")
	}
	return out
}

// notGitPart matches one path component that is not ".git" in any case:
// one to three characters, five or more, or four with one that differs.
// Seatbelt's regular expressions have no negative look-ahead; this
// spells the complement out, and holds whether a character is a byte
// (Seatbelt) or a rune (Go's regexp, which the tests use).
const notGitPart = `([^/]|[^/][^/]|[^/][^/][^/]|[^/][^/][^/][^/][^/]+|[^/.][^/][^/][^/]|\.[^/Gg][^/][^/]|\.[Gg][^/Ii][^/]|\.[Gg][Ii][^/Tt])`

// rootRegex is the start of the paths below root: "^root/".
func rootRegex(root string) string {
	if root == "/" {
		return "^/"
	}
	return "^" + ereQuote(root) + "/"
}

// writeRegexRule writes one rule of the class operations with a regex
// filter for each expression.
func writeRegexRule(b *strings.Builder, action string, regexes []string) {
	if len(regexes) == 0 {
		return
	}
	b.WriteString("(" + action + " " + seatbeltClassOps)
	for _, r := range regexes {
		b.WriteString(" (regex " + sbString(r) + ")")
	}
	b.WriteString(")\n")
}

// alternatives is a group matching any of the names exactly.
func alternatives(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = ereQuote(n)
	}
	return "(" + strings.Join(quoted, "|") + ")"
}

// foldAlternatives is a group matching any of the names in any case.
func foldAlternatives(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = foldRegex(n)
	}
	return "(" + strings.Join(quoted, "|") + ")"
}

// foldRegex matches name in any case, as strings.EqualFold compares:
// each letter by the set of letters Unicode folds together with it
// ("[Gg]"; "(s|S|ſ)" where one of them is not ASCII, since Seatbelt's
// bracket expressions hold bytes). Other characters are quoted.
func foldRegex(name string) string {
	var b strings.Builder
	for _, r := range name {
		orbit := []rune{r}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			orbit = append(orbit, f)
		}
		if len(orbit) == 1 {
			b.WriteString(ereQuote(string(r)))
			continue
		}
		slices.Sort(orbit)
		ascii := true
		for _, f := range orbit {
			if f >= utf8.RuneSelf {
				ascii = false
			}
		}
		if ascii {
			b.WriteString("[" + string(orbit) + "]")
			continue
		}
		parts := make([]string, len(orbit))
		for i, f := range orbit {
			parts[i] = string(f)
		}
		b.WriteString("(" + strings.Join(parts, "|") + ")")
	}
	return b.String()
}

// ereQuote quotes the characters that are special in a POSIX extended
// regular expression (the syntax of Seatbelt's regex filter), so that s
// matches itself.
func ereQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.[]()*+?{}|^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// readFilter is the read rule's filter for path s: the file itself, or
// the folder with everything below it (and any path that does not exist
// yet, which may become a folder).
func readFilter(s string) string {
	if fi, err := os.Stat(s); err == nil && !fi.IsDir() {
		return "(literal " + sbString(s) + ")"
	}
	return "(subpath " + sbString(s) + ")"
}

// sbPaths are the spellings of path a rule needs: as written (cleaned)
// and with links resolved, as Seatbelt compares them (/var is
// /private/var on macOS). A relative path gives none.
func sbPaths(path string) []string {
	if path == "" || !filepath.IsAbs(path) {
		return nil
	}
	path = filepath.Clean(path)
	out := []string{path}
	if real, err := filepath.EvalSymlinks(path); err == nil && filepath.IsAbs(real) && real != path {
		out = append(out, real)
	}
	return out
}

func appendNew(list []string, items ...string) []string {
	for _, s := range items {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}

// sbString quotes s as a Seatbelt (Scheme) string.
func sbString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}
