package tools

import (
	"github.com/qwen-ls/qwen-ls/tools/lazy"

	"bytes"
	"path/filepath"
	"strings"
)

// FileType is what the read pipeline makes of a file (tools.md §2.4).
type FileType string

// The file types of tools.md §2.4.
const (
	fileText     FileType = "text"
	FileBinary   FileType = "binary"
	fileSVG      FileType = "svg"
	fileNotebook FileType = "notebook"
	fileImage    FileType = "image"
	fileAudio    FileType = "audio"
	fileVideo    FileType = "video"
	filePDF      FileType = "pdf"
)

// isMedia reports whether the type is sent to the model as inline data
// (image, audio, video, PDF), subject to model.modalities.
func (t FileType) isMedia() bool {
	return t == fileImage || t == fileAudio || t == fileVideo || t == filePDF
}

// noun is how messages name the type: "image", "audio", "video", "PDF",
// "binary", "notebook", "SVG" or "text".
func (t FileType) noun() string {
	switch t {
	case filePDF:
		return "PDF"
	case fileSVG:
		return "SVG"
	}
	return string(t)
}

// mediaTypes is the built-in extension table of §2.4 step 2, with the MIME
// type each extension is sent as. The OS MIME database is never asked, so
// the answer is the same on every machine.
var mediaTypes = lazy.Value[map[string]mediaType]{Build: func() map[string]mediaType {
	return map[string]mediaType{
		".png":  {fileImage, "image/png"},
		".jpg":  {fileImage, "image/jpeg"},
		".jpeg": {fileImage, "image/jpeg"},
		".gif":  {fileImage, "image/gif"},
		".webp": {fileImage, "image/webp"},
		".bmp":  {fileImage, "image/bmp"},
		".ico":  {fileImage, "image/x-icon"},
		".tif":  {fileImage, "image/tiff"},
		".tiff": {fileImage, "image/tiff"},
		".avif": {fileImage, "image/avif"},
		".heic": {fileImage, "image/heic"},
		".mp3":  {fileAudio, "audio/mpeg"},
		".wav":  {fileAudio, "audio/wav"},
		".ogg":  {fileAudio, "audio/ogg"},
		".flac": {fileAudio, "audio/flac"},
		".m4a":  {fileAudio, "audio/mp4"},
		".aac":  {fileAudio, "audio/aac"},
		".opus": {fileAudio, "audio/opus"},
		".mp4":  {fileVideo, "video/mp4"},
		".webm": {fileVideo, "video/webm"},
		".mov":  {fileVideo, "video/quicktime"},
		".avi":  {fileVideo, "video/x-msvideo"},
		".mkv":  {fileVideo, "video/x-matroska"},
		".pdf":  {filePDF, "application/pdf"},
	}
}}

// mediaType is a file type and the MIME type it is sent as.
type mediaType struct {
	t    FileType
	mime string
}

// binaryExtensions is §2.4 step 3. read_many_files' default excludes use
// the same list.
var binaryExtensions = []string{
	".bin", ".exe", ".dll", ".so", ".dylib", ".class", ".jar", ".war", ".zip", ".tar", ".gz",
	".bz2", ".xz", ".rar", ".7z", ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt",
	".ods", ".odp", ".pyc", ".pyo", ".o", ".a", ".dat", ".wasm",
}

// textExtensions is §2.4 step 4: extensions of source, markup and
// configuration files, which are text whatever their bytes look like.
var textExtensions = lazy.Value[map[string]bool]{Build: func() map[string]bool {
	return extSet(
		// source
		".go", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".m", ".mm", ".cs", ".java",
		".kt", ".kts", ".scala", ".groovy", ".gradle", ".swift", ".rs", ".zig", ".nim", ".d", ".py",
		".pyi", ".rb", ".php", ".pl", ".pm", ".lua", ".r", ".jl", ".dart", ".ex", ".exs", ".erl",
		".hrl", ".hs", ".ml", ".mli", ".fs", ".fsx", ".clj", ".cljs", ".edn", ".lisp", ".el", ".scm",
		".js", ".mjs", ".cjs", ".jsx", ".vue", ".svelte", ".astro", ".elm", ".coffee", ".sh",
		".bash", ".zsh", ".fish", ".ps1", ".psm1", ".bat", ".cmd", ".sql", ".graphql", ".gql",
		".proto", ".thrift", ".v", ".sv", ".vhd", ".vhdl", ".asm", ".s", ".f", ".f90", ".pas",
		".vb", ".tcl", ".awk", ".sed", ".cmake", ".mk", ".tf", ".hcl", ".nix", ".sol", ".wgsl",
		".glsl", ".hlsl", ".cu",
		// markup and documents
		".md", ".markdown", ".mdx", ".rst", ".adoc", ".txt", ".text", ".org", ".tex", ".bib",
		".html", ".htm", ".xhtml", ".xml", ".xsl", ".xslt", ".css", ".scss", ".sass", ".less",
		".csv", ".tsv", ".log", ".diff", ".patch", ".po", ".pot", ".srt", ".vtt",
		// configuration and data
		".json", ".jsonc", ".json5", ".jsonl", ".ndjson", ".yaml", ".yml", ".toml", ".ini", ".cfg",
		".conf", ".config", ".properties", ".env", ".lock", ".sum", ".editorconfig",
		".gitignore", ".gitattributes", ".gitmodules", ".dockerignore", ".npmrc", ".nvmrc",
		".prettierrc", ".eslintrc", ".babelrc", ".qwenignore", ".plist", ".xcconfig", ".tmpl",
		".tpl", ".j2", ".jinja", ".hbs", ".mustache", ".ejs", ".erb", ".liquid", ".pug",
	)
}}

// textNames are file names that are text without a telling extension.
var textNames = lazy.Value[map[string]bool]{Build: func() map[string]bool {
	return extSet(
		"dockerfile", "containerfile", "makefile", "gnumakefile", "rakefile", "gemfile",
		"podfile", "procfile", "vagrantfile", "jenkinsfile", "brewfile", "justfile",
		"cmakelists.txt", "go.mod", "go.sum", "go.work", "license", "licence", "copying",
		"notice", "authors", "contributors", "changelog", "readme", "todo", "codeowners",
		".gitignore", ".gitattributes", ".gitmodules", ".env", ".bashrc", ".zshrc", ".profile",
		".bash_profile", ".vimrc", ".editorconfig", ".npmrc", ".dockerignore", ".qwenignore",
	)
}}

func extSet(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// fileTypeByName applies §2.4 steps 1–4 to a file name; known is false
// when the name says nothing and the bytes must be sniffed (step 5).
func fileTypeByName(name string) (t FileType, known bool) {
	base := strings.ToLower(filepath.Base(name))
	ext := strings.ToLower(filepath.Ext(base))
	switch ext {
	case ".ts", ".mts", ".cts", ".tsx":
		// Before the media table: .ts is also an MPEG transport stream.
		return fileText, true
	case ".svg":
		return fileSVG, true
	case ".ipynb":
		return fileNotebook, true
	}
	if m, ok := mediaTypes.Get()[ext]; ok {
		return m.t, true
	}
	if isBinaryExtension(base) {
		return FileBinary, true
	}
	if textExtensions.Get()[ext] || textNames.Get()[base] {
		return fileText, true
	}
	// README.md is caught above; README.ja, LICENSE-MIT and the like here.
	for _, prefix := range []string{"readme", "license", "licence", "changelog", "dockerfile", "makefile"} {
		if strings.HasPrefix(base, prefix) && (len(base) == len(prefix) || strings.ContainsRune(".-_", rune(base[len(prefix)]))) {
			return fileText, true
		}
	}
	return "", false
}

// isBinaryExtension reports whether name ends in one of the binary
// extensions of §2.4 step 3.
func isBinaryExtension(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	for _, b := range binaryExtensions {
		if ext == b {
			return true
		}
	}
	return false
}

// sniffLen is how much of a file step 5 looks at.
const sniffLen = 4096

// sniffFileType is §2.4 step 5, on a file's first bytes (it looks at no
// more than 4,096): empty or starting with a BOM → text; a NUL byte →
// binary; over 30 % of the bytes in 0x00–0x08 or 0x0E–0x1F → binary; else
// text.
func sniffFileType(head []byte) FileType {
	if len(head) > sniffLen {
		head = head[:sniffLen]
	}
	if len(head) == 0 {
		return fileText
	}
	for _, bom := range [][]byte{{0xEF, 0xBB, 0xBF}, {0xFF, 0xFE}, {0xFE, 0xFF}, {0x00, 0x00, 0xFE, 0xFF}} {
		if bytes.HasPrefix(head, bom) {
			return fileText
		}
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return FileBinary
	}
	control := 0
	for _, c := range head {
		if c <= 0x08 || (c >= 0x0E && c <= 0x1F) {
			control++
		}
	}
	if control*10 > len(head)*3 {
		return FileBinary
	}
	return fileText
}

// DetectFileType is §2.4 for a file on disk: the name decides when it can
// (steps 1–4), else the first bytes do (step 5). head may be the whole
// file; a nil head (the bytes could not be read) counts as text.
func DetectFileType(name string, head []byte) FileType {
	if t, ok := fileTypeByName(name); ok {
		return t
	}
	return sniffFileType(head)
}

// bufferFileType is the type of an open editor buffer (tools.md §2.3): it
// comes from the name only, and a name that says binary, or nothing,
// counts as text, since the editor holds the buffer as text.
func bufferFileType(name string) FileType {
	t, ok := fileTypeByName(name)
	if !ok || t == FileBinary {
		return fileText
	}
	return t
}

// mimeType returns the MIME type of a media or PDF file by its extension
// (§2.4 step 2), or "" for any other name.
func mimeType(name string) string {
	if m, ok := mediaTypes.Get()[strings.ToLower(filepath.Ext(name))]; ok {
		return m.mime
	}
	return ""
}
