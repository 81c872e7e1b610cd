package tools

import (
	"github.com/qwen-ls/qwen-ls/tools/lazy"

	"bytes"
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// The scan of grep_search: the targets are read (open buffer or disk,
// skipping binary and oversized files) and matched in parallel, and the
// kept lines are bounded by the caps.

// grepSniffLen is how many leading bytes decide whether a file of unknown
// type is binary (§2.4 step 5).
const grepSniffLen = 4096

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
	// inside judges the real path of each opened file (see
	// Env.openedInside); made once per scan, shared by the workers.
	inside func(real string) bool

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
	s.inside = s.env.openedInside(pathOptions{AllowTemp: true})
	s.hits = make([]*grepHits, n)
	s.countOnly.Store(int64(n))
	workers := min(runtime.GOMAXPROCS(0), n)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newGrepWorker(s)
			defer w.close()
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

// grepWorker holds one goroutine's reusable buffers, and the folder of
// the last file it read, held open.
type grepWorker struct {
	s       *grepScan
	buf     []byte
	decoded []byte
	// dir is that folder ("" before the first file); dirFD is its
	// descriptor (-1 when it could not be opened), and dirInside says
	// whether its real path passed s.inside.
	dir       string
	dirFD     grepFD
	dirInside bool
}

func newGrepWorker(s *grepScan) *grepWorker { return &grepWorker{s: s, dirFD: grepNoFD} }

// close releases the folder descriptor.
func (w *grepWorker) close() {
	if w.dirFD != grepNoFD {
		grepClose(w.dirFD)
		w.dirFD = grepNoFD
	}
}

// open opens a file of the walk without following a symlink in its last
// component. A parent folder swapped for a symlink after the walk listed
// it would lead out of the workspace, so the folder's real path is what
// is judged: the folder is opened and checked once for all its files (the
// targets come in path order), and each file is opened by its name in
// that folder, which cannot lead anywhere else. A folder that cannot be
// opened (no read permission) falls back to opening the file by its path
// and checking the file's own real path.
func (w *grepWorker) open(path string) (grepFD, error) {
	i := strings.LastIndexByte(path, filepath.Separator)
	if i < 0 {
		return w.openChecked(path, grepNoFollow)
	}
	dir, name := path[:i], path[i+1:]
	if dir == "" {
		dir = string(filepath.Separator)
	}
	if dir != w.dir {
		w.close()
		w.dir = dir
		fd, err := grepOpen(dir, grepDirectory)
		if err == nil {
			w.dirFD = fd
			real, ok := workspace.OpenedPath(uintptr(fd))
			w.dirInside = !ok || w.s.inside(real)
		}
	}
	if w.dirFD == grepNoFD {
		return w.openChecked(path, grepNoFollow)
	}
	if !w.dirInside {
		return grepNoFD, workspace.ErrEscaped
	}
	return grepOpenAt(w.dirFD, name, grepNoFollow)
}

// openChecked opens path and checks the real path of the file opened.
func (w *grepWorker) openChecked(path string, flags int) (grepFD, error) {
	fd, err := grepOpen(path, flags)
	if err != nil {
		return fd, err
	}
	if real, ok := workspace.OpenedPath(uintptr(fd)); ok && !w.s.inside(real) {
		grepClose(fd)
		return grepNoFD, workspace.ErrEscaped
	}
	return fd, nil
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

// grepKeptText is a matching line as stored: with its indentation, which
// the edit tool needs exact, and right-trimmed like read_file's lines (edit
// forgives trailing blanks); and when it is far longer than the character
// cap could show, cut (at a rune boundary) to a length that still exceeds
// the cap, so the output cuts it the same way.
func grepKeptText(line []byte, threshold int) string {
	line = bytes.TrimRight(line, " \t\r")
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
	fd, err := w.open(t.path)
	if err == errGrepSymlink {
		real, rerr := filepath.EvalSymlinks(t.path)
		if rerr != nil || w.s.env.checkInside(real, pathOptions{AllowTemp: true}) != nil {
			return nil, false
		}
		// The check above came before the open: judge the file opened.
		fd, err = w.openChecked(real, 0)
		t.size = -1
	}
	if err != nil {
		return nil, false
	}
	defer grepClose(fd)
	if t.size < 0 {
		size, ok := grepRegularSize(fd)
		if !ok {
			return nil, false
		}
		t.size = size
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

// grepRead appends the file's bytes to buf until it holds want bytes or
// the file ends. want comes from a stat: stopping there saves the read
// that would only report the end of the file (a file that grew since the
// stat is read up to its old size, as if the search had come first).
// With want 0 the file is read to its end, up to just past MaxReadSize.
func grepRead(fd grepFD, buf []byte, want int) ([]byte, error) {
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
		n, err := grepReadFD(fd, buf[len(buf):cap(buf)])
		if err == errGrepInterrupted {
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
	sets := grepSets.Get()
	switch {
	case sets.textFirst[ext]:
		return false, false
	case sets.mediaExt[ext]:
		return true, false
	case sets.binaryExt[ext]:
		return !buffer, false
	case sets.textExt[ext] || sets.textNames[name]:
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

// grepSets are the name tables of grepSkipsFile, built on the first
// search.
var grepSets = lazy.Value[grepNameSets]{Build: func() grepNameSets {
	return grepNameSets{
		textFirst: grepSetOf(".ts .mts .cts .tsx .svg .ipynb"),
		mediaExt: grepSetOf(`.png .jpg .jpeg .gif .webp .bmp .ico .tif .tiff .avif .heic
		.mp3 .wav .ogg .flac .m4a .aac .opus .mp4 .webm .mov .avi .mkv .pdf`),
		binaryExt: grepSetOf(`.bin .exe .dll .so .dylib .class .jar .war .zip .tar .gz .bz2 .xz
		.rar .7z .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp .pyc .pyo .o .a .dat .wasm`),
		textExt: grepSetOf(`.go .mod .sum .work .c .h .cc .cpp .cxx .hh .hpp .hxx .m .mm .java .kt
		.kts .scala .groovy .gradle .rs .py .pyi .rb .php .pl .pm .lua .r .jl .dart .swift .cs
		.fs .vb .js .mjs .cjs .jsx .vue .svelte .astro .json .jsonc .json5 .yaml .yml .toml
		.ini .cfg .conf .properties .env .md .markdown .mdx .txt .text .rst .adoc .tex .html
		.htm .xhtml .css .scss .sass .less .xml .xsd .xsl .sh .bash .zsh .fish .ps1 .bat .cmd
		.sql .graphql .gql .proto .thrift .tf .hcl .nix .zig .nim .ex .exs .erl .hrl .hs .ml
		.mli .clj .cljs .el .vim .s .asm .csv .tsv .log .diff .patch .lock .cmake .mk .in
		.tmpl .tpl .golden .txtar .editorconfig .gitignore .gitattributes .dockerignore
		.qwenignore`),
		textNames: grepSetOf(`Dockerfile Makefile GNUmakefile makefile Rakefile Gemfile Procfile
		Jenkinsfile Vagrantfile LICENSE LICENCE COPYING README AUTHORS CONTRIBUTORS PATENTS
		NOTICE CHANGELOG VERSION go.mod go.sum .gitignore .gitattributes .env .editorconfig
		.qwenignore .npmrc .bashrc .profile`),
	}
}}

type grepNameSets struct {
	textFirst, mediaExt, binaryExt, textExt, textNames map[string]bool
}
