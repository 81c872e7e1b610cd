package tools

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// grep_search (tools.md §3.5) runs in-process: the files of the search
// directories (glob.go's searchFiles) are scanned in parallel, a required
// literal taken from the parsed pattern skips files and lines that cannot
// match before the regexp runs, and the hits are put back in path order.

//go:embed grep.md
var grepDescription string

const grepSchema = `{
  "type": "object",
  "properties": {
    "pattern": {
      "type": "string",
      "description": "The regular expression (Go RE2 syntax) to look for in each line. Matching ignores case unless the pattern starts with (?-i)."
    },
    "path": {
      "type": "string",
      "description": "Absolute path of the directory (or single file) to search. Leave it out to search every workspace root."
    },
    "glob": {
      "type": "string",
      "description": "Only search files whose path matches this glob, such as \"*.go\" or \"src/**/*.{ts,tsx}\". A glob without a slash matches the file name."
    },
    "limit": {
      "type": "integer",
      "minimum": 1,
      "description": "The most matching lines to show."
    }
  },
  "required": ["pattern"]
}`

// grepLookaroundHint is added to the message of a pattern that fails to
// compile and looks like it uses what RE2 lacks.
const grepLookaroundHint = " Lookahead, lookbehind and backreferences are not supported (Go RE2 syntax); rewrite the pattern without them."

// grepSniffLen is how many leading bytes decide whether a file of unknown
// type is binary (§2.4 step 5).
const grepSniffLen = 4096

// GrepSearch is the grep_search tool (alias search_file_content): it lists
// the lines of the workspace's files that match a regular expression.
type GrepSearch struct {
	Base
	env *Env
}

// NewGrepSearch returns the grep_search tool working on env's workspace.
func NewGrepSearch(env *Env) *GrepSearch {
	return &GrepSearch{
		Base: Base{Spec: Spec{
			Name:        "grep_search",
			DisplayName: "Grep",
			Description: grepDescription,
			Schema:      json.RawMessage(grepSchema),
			Kind:        KindSearch,
			Aliases:     []string{"search_file_content"},
		}},
		env: env,
	}
}

// grepRequest is a validated grep_search call.
type grepRequest struct {
	pattern string
	m       *grepMatcher
	// dirs are the directories searched; file is set instead when path
	// names a file. explicit says the path argument chose them.
	dirs     []string
	file     string
	explicit bool
	// glob filters files; globLower is its lowered form, globBase says
	// it matches base names (it has no slash).
	glob      string
	globLower string
	globBase  bool
	limit     int
}

func (g *GrepSearch) Validate(params map[string]any) *ToolError {
	_, terr := g.request(params)
	return terr
}

func (g *GrepSearch) request(params map[string]any) (*grepRequest, *ToolError) {
	pattern, _ := String(params, "pattern")
	if strings.TrimSpace(pattern) == "" {
		return nil, InvalidParams(`Argument "pattern" must not be empty.`)
	}
	m, terr := compileGrepPattern(pattern)
	if terr != nil {
		return nil, terr
	}
	req := &grepRequest{pattern: pattern, m: m}
	if raw, ok := String(params, "path"); ok && strings.TrimSpace(raw) != "" {
		p, terr := g.env.searchDir(raw, false)
		if terr != nil {
			return nil, terr
		}
		req.explicit = true
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			req.dirs = []string{p}
		} else {
			req.file = p
		}
	} else {
		req.dirs = g.env.Workspace.Roots.List()
	}
	if glob, ok := String(params, "glob"); ok && glob != "" {
		if !doublestar.ValidatePattern(glob) {
			return nil, InvalidParams(`"` + glob + `" is not a valid glob pattern.`)
		}
		req.glob, req.globLower = glob, strings.ToLower(glob)
		req.globBase = !strings.Contains(glob, "/")
	}
	if n, ok := Int(params, "limit"); ok {
		req.limit = n
	}
	return req, nil
}

// compileGrepPattern compiles pattern as RE2 behind (?i) and prepares its
// literal prefilter.
func compileGrepPattern(pattern string) (*grepMatcher, *ToolError) {
	// Parsing the pattern on its own gives the compiler's message without
	// the (?i) we add.
	parsed, err := syntax.Parse(pattern, syntax.Perl|syntax.FoldCase)
	if err != nil {
		msg := `"` + pattern + `" is not a valid regular expression (` + err.Error() + `).`
		if grepUsesLookaround(pattern) {
			msg += grepLookaroundHint
		}
		return nil, InvalidParams(msg)
	}
	re, err := regexp.Compile("(?i)" + pattern)
	if err != nil {
		return nil, InvalidParams(`"` + pattern + `" is not a valid regular expression (` + err.Error() + `).`)
	}
	return newGrepMatcher(re, parsed.Simplify()), nil
}

// grepUsesLookaround reports whether a pattern holds the Perl constructs that
// RE2 refuses: lookaround groups and backreferences \1 to \9.
func grepUsesLookaround(p string) bool {
	for _, s := range []string{"(?=", "(?!", "(?<=", "(?<!"} {
		if strings.Contains(p, s) {
			return true
		}
	}
	for i := 0; i+1 < len(p); i++ {
		if p[i] == '\\' {
			if p[i+1] >= '1' && p[i+1] <= '9' {
				return true
			}
			i++ // an escaped backslash does not start a backreference
		}
	}
	return false
}

func (g *GrepSearch) Describe(params map[string]any) string {
	pattern, _ := String(params, "pattern")
	out := "'" + pattern + "'"
	if p, ok := String(params, "path"); ok && strings.TrimSpace(p) != "" {
		out += " in path '" + g.env.Rel(CleanPathArg(p)) + "'"
	}
	if glob, ok := String(params, "glob"); ok && glob != "" {
		out += " (filter: '" + glob + "')"
	}
	return out
}

func (g *GrepSearch) Locations(params map[string]any) []Location {
	if p, ok := String(params, "path"); ok && filepath.IsAbs(CleanPathArg(p)) {
		return []Location{{Path: CleanPathArg(p)}}
	}
	return nil
}

func (g *GrepSearch) Execute(ctx context.Context, _ *Call, params map[string]any, _ func(Output)) (Result, error) {
	req, terr := g.request(params)
	if terr != nil {
		return Result{Error: terr}, nil
	}
	targets, err := g.targets(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return ErrorResult(ErrorGrepExecution, "The text search failed: "+err.Error()), nil
	}
	lineCap := g.env.LineLimit()
	if req.limit > 0 && (lineCap <= 0 || req.limit < lineCap) {
		lineCap = req.limit
	}
	s := &grepScan{
		env:       g.env,
		m:         req.m,
		targets:   targets,
		lineCap:   lineCap,
		threshold: g.env.Threshold(),
	}
	if err := s.run(ctx); err != nil {
		return Result{}, err
	}
	return s.result(req), nil
}

// grepTarget is one file to scan.
type grepTarget struct {
	path string
	// show is the path printed in the File: line.
	show string
	// size is the size on disk, -1 when unknown.
	size int64
	// buffer says the text comes from an open editor buffer.
	buffer bool
}

// targets lists the files to scan, in output order.
func (g *GrepSearch) targets(ctx context.Context, req *grepRequest) ([]grepTarget, error) {
	ws := g.env.Workspace
	open := map[string]bool{}
	for _, p := range ws.Overlay.Paths() {
		open[p] = true
	}
	filter := searchFilter{RespectGit: g.env.RespectGitIgnore(), RespectQwen: g.env.RespectQwenIgnore()}
	if req.file != "" {
		// A file named by path is filtered like the files of a directory.
		if filter.drops(ws.Ignore.Check(req.file, false)) {
			return nil, nil
		}
		name := filepath.Base(req.file)
		if req.glob != "" && !doublestar.MatchUnvalidated(req.globLower, strings.ToLower(name)) {
			return nil, nil
		}
		skip, _ := grepSkipsFile(name, open[req.file])
		if skip {
			return nil, nil
		}
		return []grepTarget{{path: req.file, show: name, size: -1, buffer: open[req.file]}}, nil
	}
	var out []grepTarget
	seen := map[string]bool{}
	for _, dir := range req.dirs {
		first := len(out)
		err := g.env.searchFiles(ctx, dir, filter, func(f searchFile) {
			rel := f.Path[len(dir)+len(searchSep(dir)):]
			if req.glob != "" {
				subject := rel
				if req.globBase {
					subject = filepath.Base(rel)
				}
				if !doublestar.MatchUnvalidated(req.globLower, strings.ToLower(filepath.ToSlash(subject))) {
					return
				}
			}
			buffer := open[f.Path]
			if skip, _ := grepSkipsFile(filepath.Base(rel), buffer); skip {
				return
			}
			if len(req.dirs) > 1 {
				if seen[f.Path] {
					return
				}
				seen[f.Path] = true
			}
			show := rel
			if len(req.dirs) > 1 {
				show = f.Path
			}
			out = append(out, grepTarget{path: f.Path, show: show, size: f.Size, buffer: buffer})
		})
		if err != nil {
			return nil, err
		}
		slices.SortFunc(out[first:], func(a, b grepTarget) int { return strings.Compare(a.path, b.path) })
	}
	return out, nil
}

// grepLine is one matching line kept for the output.
type grepLine struct {
	n    int
	text string
	// chars is the length in characters of the line as printed.
	chars int
}

// grepHits is what the scan of one file found.
type grepHits struct {
	count int
	lines []grepLine
}

// grepScan scans targets in parallel. Files are handed out in order, and
// the lines kept for the output are bounded: once the completed prefix of
// the file list holds more than the caps can show, the files after it are
// only counted.
type grepScan struct {
	env       *Env
	m         *grepMatcher
	targets   []grepTarget
	lineCap   int // <= 0: no line cap
	threshold int // <= 0: no character cap

	next atomic.Int64
	// countOnly is the index from which files are only counted.
	countOnly atomic.Int64

	mu sync.Mutex
	// hits[i] is set when file i is done; prefix files are all done.
	hits   []*grepHits
	prefix int
	kept   int
	chars  int
}

func (s *grepScan) run(ctx context.Context) error {
	n := len(s.targets)
	s.hits = make([]*grepHits, n)
	s.countOnly.Store(int64(n))
	workers := min(runtime.GOMAXPROCS(0), n)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := grepWorker{s: s}
			for ctx.Err() == nil {
				i := int(s.next.Add(1) - 1)
				if i >= n {
					return
				}
				s.done(i, w.scan(i))
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// done records the hits of file i and advances the completed prefix.
func (s *grepScan) done(i int, h *grepHits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int64(i) >= s.countOnly.Load() {
		h.lines = nil
	}
	s.hits[i] = h
	for s.prefix < len(s.hits) && s.hits[s.prefix] != nil && int64(s.prefix) < s.countOnly.Load() {
		ph := s.hits[s.prefix]
		s.prefix++
		s.kept += len(ph.lines)
		for _, l := range ph.lines {
			s.chars += l.chars
		}
		if (s.lineCap > 0 && s.kept >= s.lineCap) || (s.threshold > 0 && s.chars > s.threshold) {
			// The output ends inside the prefix: drop what later files kept.
			s.countOnly.Store(int64(s.prefix))
			for _, later := range s.hits[s.prefix:] {
				if later != nil {
					later.lines = nil
				}
			}
		}
	}
}

// grepWorker holds one goroutine's reusable buffers.
type grepWorker struct {
	s       *grepScan
	buf     []byte
	decoded []byte
}

func (w *grepWorker) scan(i int) *grepHits {
	s := w.s
	t := s.targets[i]
	h := &grepHits{}
	data, ok := w.load(t)
	if !ok {
		return h
	}
	// The literal is ASCII, so outside UTF-16 and UTF-32 the raw bytes
	// hold it wherever the decoded text does: most files are dropped
	// before any decoding or validation.
	if s.m.lit != nil && !grepHasBOM(data) && s.m.lit.index(data, 0, &grepCursor{-1, -1}) < 0 {
		return h
	}
	if !t.buffer {
		data = w.decode(data)
	}
	keep := int64(i) < s.countOnly.Load()
	chars := 0
	s.m.scan(data, func(n int, line []byte) {
		h.count++
		if !keep || (s.lineCap > 0 && len(h.lines) >= s.lineCap) || (s.threshold > 0 && chars > s.threshold) {
			return
		}
		l := grepLine{n: n, text: grepKeptText(line, s.threshold)}
		l.chars = len("L: ") + len(strconv.Itoa(n)) + utf8.RuneCountInString(l.text)
		chars += l.chars
		h.lines = append(h.lines, l)
	})
	return h
}

// grepKeptText is a matching line as stored: trimmed, and when it is far
// longer than the character cap could show, cut (at a rune boundary) to a
// length that still exceeds the cap, so the output cuts it the same way.
func grepKeptText(line []byte, threshold int) string {
	line = bytes.TrimSpace(line)
	if keep := 4*threshold + 64; threshold > 0 && len(line) > keep {
		for keep > 0 && !utf8.RuneStart(line[keep]) {
			keep--
		}
		line = line[:keep]
	}
	return string(line)
}

// grepHasBOM reports whether data starts with a byte-order mark.
func grepHasBOM(data []byte) bool {
	return bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}) ||
		bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0xFE, 0xFF}) ||
		bytes.HasPrefix(data, []byte{0, 0, 0xFE, 0xFF})
}

// decode turns text that is not plain UTF-8 (a BOM, another charset) into
// UTF-8 per §2.5; plain UTF-8 is returned as it is.
func (w *grepWorker) decode(data []byte) []byte {
	if !grepHasBOM(data) && utf8.Valid(data) {
		return data
	}
	text, _ := workspace.DecodeText(data)
	w.decoded = append(w.decoded[:0], text...)
	return w.decoded
}

// load returns the text of a target (the open buffer's when there is one),
// or false when it is to be skipped: unreadable, too large, binary, or a
// symlink whose target lies outside the workspace.
func (w *grepWorker) load(t grepTarget) ([]byte, bool) {
	if t.buffer {
		if b, open := w.s.env.Workspace.Overlay.Get(t.path); open {
			w.buf = append(w.buf[:0], b.Text...)
			return w.buf, true
		}
		t.size = -1 // closed meanwhile: read the disk
	}
	if t.size > workspace.MaxReadSize {
		return nil, false
	}
	// Plain system calls, not os.File: for thousands of small files the
	// poller registration, the non-blocking switch and the finalizer of an
	// os.File cost as much as the read itself. O_NOFOLLOW makes a symlink
	// fail to open, so only symlinks pay for the check that their target
	// lies inside the workspace; O_NONBLOCK keeps a FIFO from blocking.
	fd, err := grepOpen(t.path, syscall.O_NOFOLLOW)
	if err == syscall.ELOOP {
		real, rerr := filepath.EvalSymlinks(t.path)
		if rerr != nil || w.s.env.CheckInside(real, PathOptions{AllowTemp: true}) != nil {
			return nil, false
		}
		fd, err = grepOpen(real, 0)
		t.size = -1
	}
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	if t.size < 0 {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			return nil, false
		}
		t.size = int64(st.Size)
		if t.size > workspace.MaxReadSize {
			return nil, false
		}
	}
	_, sniff := grepSkipsFile(filepath.Base(t.path), false)
	want := int(t.size)
	w.buf = w.buf[:0]
	if sniff && want > 16*grepSniffLen {
		// Read the head first, so that a large binary is not read whole.
		head, err := grepRead(fd, w.buf, grepSniffLen)
		w.buf = head
		if err != nil || grepLooksBinary(head) {
			return nil, false
		}
	}
	data, err := grepRead(fd, w.buf, want)
	w.buf = data
	if err != nil || len(data) > workspace.MaxReadSize {
		return nil, false
	}
	if sniff && grepLooksBinary(data) {
		return nil, false
	}
	return data, true
}

// grepOpen opens a file for reading with extra flags.
func grepOpen(path string, flags int) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK|flags, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// grepRead appends the file's bytes to buf until it holds want bytes or
// the file ends. want comes from a stat: stopping there saves the read
// that would only report the end of the file (a file that grew since the
// stat is read up to its old size, as if the search had come first).
// With want 0 the file is read to its end, up to just past MaxReadSize.
func grepRead(fd int, buf []byte, want int) ([]byte, error) {
	if cap(buf) < want+1 {
		buf = slices.Grow(buf, want+1-len(buf))
	}
	for want == 0 || len(buf) < want {
		if len(buf) == cap(buf) {
			if len(buf) > workspace.MaxReadSize {
				return buf, nil
			}
			buf = slices.Grow(buf, len(buf))
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return buf, err
		}
		if n <= 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
	return buf, nil
}

// grepLooksBinary is the content sniff of §2.4 step 5 on the first bytes.
func grepLooksBinary(data []byte) bool {
	if len(data) > grepSniffLen {
		data = data[:grepSniffLen]
	}
	if len(data) == 0 || grepHasBOM(data) {
		return false
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return true
	}
	ctrl := 0
	for _, c := range data {
		if c <= 0x08 || (c >= 0x0E && c <= 0x1F) {
			ctrl++
		}
	}
	return ctrl*10 > len(data)*3
}

// grepSkipsFile decides what the search does with a file from its name
// (§2.4 steps 1–4): skip it (media, and binary extensions unless the text
// comes from an open buffer), or search it, sniffing its content first when
// the name says nothing. It is grep's own copy of the type rules; the full
// detection lives with read_file.
func grepSkipsFile(name string, buffer bool) (skip, sniff bool) {
	ext := strings.ToLower(filepath.Ext(name))
	switch {
	case grepTextFirst[ext]:
		return false, false
	case grepMediaExt[ext]:
		return true, false
	case grepBinaryExt[ext]:
		return !buffer, false
	case grepTextExt[ext] || grepTextNames[name]:
		return false, false
	}
	return false, !buffer
}

func grepSetOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

var (
	grepTextFirst = grepSetOf(".ts .mts .cts .tsx .svg .ipynb")
	grepMediaExt  = grepSetOf(`.png .jpg .jpeg .gif .webp .bmp .ico .tif .tiff .avif .heic
		.mp3 .wav .ogg .flac .m4a .aac .opus .mp4 .webm .mov .avi .mkv .pdf`)
	grepBinaryExt = grepSetOf(`.bin .exe .dll .so .dylib .class .jar .war .zip .tar .gz .bz2 .xz
		.rar .7z .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp .pyc .pyo .o .a .dat .wasm`)
	grepTextExt = grepSetOf(`.go .mod .sum .work .c .h .cc .cpp .cxx .hh .hpp .hxx .m .mm .java .kt
		.kts .scala .groovy .gradle .rs .py .pyi .rb .php .pl .pm .lua .r .jl .dart .swift .cs
		.fs .vb .js .mjs .cjs .jsx .vue .svelte .astro .json .jsonc .json5 .yaml .yml .toml
		.ini .cfg .conf .properties .env .md .markdown .mdx .txt .text .rst .adoc .tex .html
		.htm .xhtml .css .scss .sass .less .xml .xsd .xsl .sh .bash .zsh .fish .ps1 .bat .cmd
		.sql .graphql .gql .proto .thrift .tf .hcl .nix .zig .nim .ex .exs .erl .hrl .hs .ml
		.mli .clj .cljs .el .vim .s .asm .csv .tsv .log .diff .patch .lock .cmake .mk .in
		.tmpl .tpl .golden .txtar .editorconfig .gitignore .gitattributes .dockerignore
		.qwenignore`)
	grepTextNames = grepSetOf(`Dockerfile Makefile GNUmakefile makefile Rakefile Gemfile Procfile
		Jenkinsfile Vagrantfile LICENSE LICENCE COPYING README AUTHORS CONTRIBUTORS PATENTS
		NOTICE CHANGELOG VERSION go.mod go.sum .gitignore .gitattributes .env .editorconfig
		.qwenignore .npmrc .bashrc .profile`)
)

// result formats the hits per §3.5.
func (s *grepScan) result(req *grepRequest) Result {
	total := 0
	for _, h := range s.hits {
		total += h.count
	}
	var loc string
	switch {
	case req.file != "":
		loc = "under " + req.file
	default:
		loc = searchLocation(req.dirs, req.explicit)
	}
	filter := ""
	if req.glob != "" {
		filter = ` (files matching "` + req.glob + `")`
	}
	if total == 0 {
		return TextResult(fmt.Sprintf(`No lines match "%s" %s%s.`, req.pattern, loc, filter), Markdown("No matches found"))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d matching %s for \"%s\" %s%s:\n---", total, searchPlural(total, "line", "lines"), req.pattern, loc, filter)
	shown, used, stopped := 0, 0, false
	for i, h := range s.hits {
		if stopped {
			break
		}
		if h.count == 0 {
			continue
		}
		if len(h.lines) == 0 || (s.lineCap > 0 && shown >= s.lineCap) {
			break
		}
		b.WriteString("\nFile: ")
		b.WriteString(s.targets[i].show)
		for _, l := range h.lines {
			if s.lineCap > 0 && shown >= s.lineCap {
				stopped = true
				break
			}
			line := "L" + strconv.Itoa(l.n) + ": " + l.text
			if s.threshold > 0 && used+l.chars > s.threshold {
				line = grepCutRunes(line, max(s.threshold-used, 10)) + "..."
				stopped = true
			}
			b.WriteByte('\n')
			b.WriteString(line)
			used += l.chars
			shown++
			if stopped {
				break
			}
		}
		b.WriteString("\n---")
	}
	display := fmt.Sprintf("Found %d %s", total, searchPlural(total, "match", "matches"))
	if k := total - shown; k > 0 {
		fmt.Fprintf(&b, "\n[%d more matching %s not shown]", k, searchPlural(k, "line", "lines"))
		display += " (truncated)"
	}
	return TextResult(b.String(), Markdown(display))
}

// grepCutRunes returns the first n characters of s.
func grepCutRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// grepMatcher finds the matching lines of a text.
type grepMatcher struct {
	re *regexp.Regexp
	// lit is a literal that every match contains, or nil when the
	// pattern has none that is safe to scan for; others are the rest of
	// them, checked on a candidate line before the regexp runs.
	lit    *grepLit
	others []*grepLit
	// whole says the pattern is lit and nothing more, so a line that
	// holds lit matches without running the regexp.
	whole bool
}

func newGrepMatcher(re *regexp.Regexp, parsed *syntax.Regexp) *grepMatcher {
	m := &grepMatcher{re: re}
	var lits []*grepLit
	grepCollectLiterals(parsed, &lits)
	if len(lits) == 0 {
		return m
	}
	best := 0
	for i, l := range lits {
		if len(l.text) > len(lits[best].text) ||
			(len(l.text) == len(lits[best].text) && l.freq() < lits[best].freq()) {
			best = i
		}
	}
	m.lit = lits[best]
	m.others = append(lits[:best:best], lits[best+1:]...)
	for parsed.Op == syntax.OpCapture {
		parsed = parsed.Sub[0]
	}
	m.whole = parsed.Op == syntax.OpLiteral && len(lits) == 1 && len(m.lit.text) == len(parsed.Rune)
	return m
}

// grepCollectLiterals appends the literals that every match of re contains.
// Only what is certain counts: alternations, optional and starred parts
// give nothing.
func grepCollectLiterals(re *syntax.Regexp, out *[]*grepLit) {
	switch re.Op {
	case syntax.OpLiteral:
		grepAddLiteral(re.Rune, re.Flags&syntax.FoldCase != 0, out)
	case syntax.OpCapture, syntax.OpPlus:
		grepCollectLiterals(re.Sub[0], out)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			grepCollectLiterals(re.Sub[0], out)
		}
	case syntax.OpConcat:
		// Neighbouring literals (including captured ones) join into one.
		var run []rune
		fold := false
		for _, sub := range grepFlatConcat(re.Sub, nil) {
			lit := sub
			for lit.Op == syntax.OpCapture {
				lit = lit.Sub[0]
			}
			if lit.Op == syntax.OpLiteral {
				run = append(run, lit.Rune...)
				fold = fold || lit.Flags&syntax.FoldCase != 0
				continue
			}
			grepAddLiteral(run, fold, out)
			run, fold = nil, false
			grepCollectLiterals(sub, out)
		}
		grepAddLiteral(run, fold, out)
	}
}

// grepFlatConcat appends subs to out with nested concatenations (which
// Simplify makes of counted repeats such as a{3}) spliced in.
func grepFlatConcat(subs []*syntax.Regexp, out []*syntax.Regexp) []*syntax.Regexp {
	for _, s := range subs {
		if s.Op == syntax.OpConcat {
			out = grepFlatConcat(s.Sub, out)
		} else {
			out = append(out, s)
		}
	}
	return out
}

// grepAddLiteral appends the usable pieces of a literal: runs of ASCII that
// a case-insensitive byte comparison finds exactly where the regexp would.
// A non-ASCII rune, a line break, or (when folding) a letter that folds to
// a non-ASCII rune (k to the Kelvin sign, s to the long s) ends a piece.
func grepAddLiteral(runes []rune, fold bool, out *[]*grepLit) {
	var piece []byte
	flush := func() {
		if len(piece) > 0 {
			*out = append(*out, newGrepLit(piece, fold))
			piece = nil
		}
	}
	for _, r := range runes {
		if r >= utf8.RuneSelf || r == '\n' || r == '\r' || (fold && grepFoldsOutOfASCII[r]) {
			flush()
			continue
		}
		piece = append(piece, byte(r))
	}
	flush()
}

// grepFoldsOutOfASCII marks the ASCII runes whose case-fold orbit holds a
// non-ASCII rune.
var grepFoldsOutOfASCII = func() (t [utf8.RuneSelf]bool) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f >= utf8.RuneSelf {
				t[r] = true
			}
		}
	}
	return t
}()

// grepLit is a literal to scan for. Letters compared without case are
// lower-cased in text and have 0x20 in mask: a byte c matches text[j]
// when c|mask[j] == text[j], which for a letter accepts exactly its two
// cases.
type grepLit struct {
	text []byte
	mask []byte
	// rare is the offset of the byte the scan looks for, chosen as the
	// least frequent in source text; b1 and b2 are its two cases (equal
	// when it has one).
	rare   int
	b1, b2 byte
}

func newGrepLit(piece []byte, fold bool) *grepLit {
	l := &grepLit{text: make([]byte, len(piece)), mask: make([]byte, len(piece))}
	for j, c := range piece {
		if fold && grepIsLetter(c) {
			c |= 0x20
			l.mask[j] = 0x20
		}
		l.text[j] = c
	}
	for j := range l.text {
		if grepByteFreq(l.text[j], l.mask[j]) < grepByteFreq(l.text[l.rare], l.mask[l.rare]) {
			l.rare = j
		}
	}
	l.b1, l.b2 = l.text[l.rare], l.text[l.rare]
	if l.mask[l.rare] != 0 {
		l.b2 = l.b1 &^ 0x20
	}
	return l
}

func grepIsLetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// freq is the frequency of the literal's rarest byte.
func (l *grepLit) freq() int { return grepByteFreq(l.text[l.rare], l.mask[l.rare]) }

// grepByteFreq is a rough frequency of a byte (both cases with a fold mask)
// in source code.
func grepByteFreq(c, mask byte) int {
	if mask != 0 {
		return grepByteFreqs[c|0x20] + grepByteFreqs[c&^0x20]
	}
	return grepByteFreqs[c]
}

// grepByteFreqs is how often each byte occurs in source text, in units of
// 1/10000, as counted over the Go distribution's sources (Go, assembly,
// C, JavaScript, HTML, Markdown). Unlisted bytes count as rarest.
var grepByteFreqs = [256]int{
	' ': 1458, 'e': 500, 't': 410, '\t': 386, 'r': 333, '0': 332, 'n': 318, '\n': 308,
	'a': 297, 'i': 283, 's': 265, 'o': 256, ',': 239, 'x': 213, 'l': 183, 'c': 180,
	'f': 163, 'd': 157, 'u': 153, '1': 135, '.': 130, 'p': 127, '/': 120, '(': 117,
	')': 117, 'm': 106, '2': 104, ':': 100, 'g': 98, 'h': 91, '"': 86, '=': 86, 'b': 80,
	'4': 78, 'S': 77, '_': 75, '3': 73, '6': 70, 'T': 68, 'A': 66, 'E': 66, '{': 65,
	'y': 65, '}': 65, 'R': 64, 'v': 63, '8': 60, 'O': 53, 'C': 53, 'I': 53, '\\': 52,
	'P': 47, '5': 47, 'D': 46, '9': 42, 'M': 41, '7': 40, 'k': 40, 'X': 39, 'L': 38,
	'w': 37, 'F': 36, 'V': 36, 'N': 35, 'B': 33, '[': 25, '-': 25, ']': 25, 'U': 21,
	'*': 20, 'G': 19, 'H': 17, ';': 14, '!': 13, 'W': 12, '+': 12, 'Y': 11, '&': 11,
	'\'': 10, '<': 10, 'z': 10, 'K': 9, '|': 9, '%': 9, 'Q': 8, '>': 8, 'q': 7, 'j': 6,
	'$': 6, 'Z': 5, '`': 5, '#': 3, 'J': 2, '^': 1, '?': 1, '@': 1,
}

// grepCursor remembers where the next occurrences of a literal's rare byte
// (in each case) lie in one text, so that a scan moving forward looks at
// every byte of the text at most once per case. -1 means not looked yet.
type grepCursor struct{ c1, c2 int }

// index returns the offset of the first occurrence of l in data at or
// after from, or -1. Calls on one text must use one cursor and a from that
// never decreases.
func (l *grepLit) index(data []byte, from int, cur *grepCursor) int {
	n := len(l.text)
	for {
		lo := from + l.rare
		if from+n > len(data) {
			return -1
		}
		if cur.c1 < lo {
			cur.c1 = grepIndexByteFrom(data, lo, l.b1)
		}
		p := cur.c1
		if l.b2 != l.b1 {
			if cur.c2 < lo {
				cur.c2 = grepIndexByteFrom(data, lo, l.b2)
			}
			p = min(p, cur.c2)
		}
		start := p - l.rare
		if start+n > len(data) {
			return -1
		}
		if l.at(data[start : start+n]) {
			return start
		}
		from = start + 1
	}
}

// grepIndexByteFrom is the offset of the first c in data at or after from, or
// len(data) when there is none.
func grepIndexByteFrom(data []byte, from int, c byte) int {
	i := bytes.IndexByte(data[from:], c)
	if i < 0 {
		return len(data)
	}
	return from + i
}

// at reports whether s (as long as the literal) is the literal.
func (l *grepLit) at(s []byte) bool {
	for j, c := range l.text {
		if s[j]|l.mask[j] != c {
			return false
		}
	}
	return true
}

// scan calls hit with the 1-based number and the text (without its line
// break and trailing \r) of every matching line of data, in order.
func (m *grepMatcher) scan(data []byte, hit func(n int, line []byte)) {
	if m.lit == nil {
		n := 0
		for start := 0; start < len(data); {
			end, next := len(data), len(data)
			if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
				end, next = start+i, start+i+1
			}
			n++
			if line := grepTrimCR(data[start:end]); m.re.Match(line) {
				hit(n, line)
			}
			start = next
		}
		return
	}
	cur := grepCursor{-1, -1}
	n, counted := 1, 0
	for pos := 0; pos < len(data); {
		i := m.lit.index(data, pos, &cur)
		if i < 0 {
			return
		}
		// pos is always the start of a line.
		ls := pos + bytes.LastIndexByte(data[pos:i], '\n') + 1
		le := len(data)
		if j := bytes.IndexByte(data[i:], '\n'); j >= 0 {
			le = i + j
		}
		n += bytes.Count(data[counted:ls], []byte{'\n'})
		counted = ls
		if line := grepTrimCR(data[ls:le]); m.lineMatches(line) {
			hit(n, line)
		}
		pos = le + 1
	}
}

// lineMatches runs the rest of the test on a line known to hold lit.
func (m *grepMatcher) lineMatches(line []byte) bool {
	if m.whole {
		return true
	}
	for _, o := range m.others {
		if o.index(line, 0, &grepCursor{-1, -1}) < 0 {
			return false
		}
	}
	return m.re.Match(line)
}

func grepTrimCR(line []byte) []byte {
	if len(line) > 0 && line[len(line)-1] == '\r' {
		return line[:len(line)-1]
	}
	return line
}
