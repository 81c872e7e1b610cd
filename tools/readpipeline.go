package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/qwen-ls/qwen-ls/workspace"
)

// The limits of tools.md §2.6.
const (
	// maxInlineData bounds a media part once base64-encoded.
	maxInlineData = 10 << 20
	// maxSVGText is the largest SVG returned as text.
	maxSVGText = 1 << 20
	// pdfTextMax is where pdftotext output is cut, in characters.
	pdfTextMax = 100000
	// pdfTimeout bounds one pdftotext run.
	pdfTimeout = 30 * time.Second
	// notebookCellOutputMax and notebookOutputMax bound the text outputs
	// of one notebook cell and of the whole notebook, in characters.
	notebookCellOutputMax = 10000
	notebookOutputMax     = 100000
)

// truncatedMark ends a line cut by the character budget (§2.7).
const truncatedMark = "... [truncated]"

// readSpec asks the read pipeline for one file.
type readSpec struct {
	// Path is absolute and already checked against the workspace.
	Path string
	// Offset is the 0-based first line of the window.
	Offset int
	// Limit is the number of lines; <= 0 means no line limit.
	Limit int
	// Budget is the character budget of the window; <= 0 means none.
	Budget int
}

// textWindow is a window of a text's lines (§2.7).
type textWindow struct {
	// Text is the window's lines, right-trimmed, joined with "\n"; the
	// last one ends in "... [truncated]" when Cut.
	Text string
	// Start and End are the 1-based first and last lines returned; Total
	// is the number of lines of the whole text.
	Start, End, Total int
	// Cut says the budget cut the last line.
	Cut bool
	// Truncated says the window is not the whole text: it starts after
	// the first line, stops before the last, or was cut.
	Truncated bool
}

// fileContent is what the read pipeline made of one file. Exactly one of
// Err, Media, Window (when Windowed) and Message carries the content.
type fileContent struct {
	Path string
	Rel  string
	Type FileType
	// Err is a failure of §2.6's table; ErrDisplay its returnDisplay.
	Err        *ToolError
	ErrDisplay string
	// Media is the inline data of an image, audio, video or PDF the model
	// accepts.
	Media *InlineData
	// Windowed says Window holds the file's text: a text file, an SVG, a
	// rendered notebook, or a PDF's text from pdftotext.
	Windowed bool
	Window   textWindow
	// Message replaces the content of a file that is not shown (binary, a
	// modality the model does not accept, an SVG over 1 MB).
	Message string
	// Display is the returnDisplay of a Media or Message result.
	Display string
	// Entry is what the read tells the ledger; nil after a failure. Its
	// Full field is false when the window is truncated; callers that
	// asked for an explicit window clear it too.
	Entry *ledgerEntry
}

// acceptsModality reports whether the model accepts input of a media type
// (model.modalities.{image,audio,video,pdf}, all false by default).
func (e *Env) acceptsModality(t FileType) bool {
	if !t.isMedia() {
		return true
	}
	return e.Settings().Bool("model.modalities."+string(t), false)
}

// readContent runs the read pipeline of tools.md §2.3, §2.6 and §2.7 for
// one file: the open buffer or the disk, the file type, then the content
// by type. Failures the model should read are fileContent.Err; the Go
// error is only ever ctx's, when the call was cancelled.
func (e *Env) readContent(ctx context.Context, spec readSpec) (fileContent, error) {
	abs := spec.Path
	out := fileContent{Path: abs, Rel: e.Rel(abs)}
	name := filepath.Base(abs)

	var snap *workspace.Snapshot
	var raw []byte
	var fi fs.FileInfo
	if buf, open := e.Workspace.Overlay.Get(abs); open && !bufferFileType(name).isMedia() {
		out.Type = bufferFileType(name)
		snap = &workspace.Snapshot{Path: abs, Text: buf.Text, Source: workspace.FromBuffer,
			Version: buf.Version, Format: workspace.TextFormat{CRLF: strings.Contains(buf.Text, "\r\n")}}
	} else {
		// Media and PDF bytes come from the disk even when the editor has
		// the file open (§2.3).
		var err error
		raw, fi, err = workspace.ReadFileBoundedIn(abs, workspace.MaxReadSize, e.openedInsideFor(abs, pathOptions{AllowTemp: true}))
		if err != nil {
			out.Err, out.ErrDisplay = readFailure(abs, err)
			return out, nil
		}
		out.Type = DetectFileType(name, raw)
		if !out.Type.isMedia() && out.Type != FileBinary {
			snap = workspace.DiskSnapshot(abs, raw, fi)
		}
	}

	switch t := out.Type; {
	case t == FileBinary:
		out.Message = out.Rel + " is a binary file; its content is not shown."
		out.Display = "Skipped binary file: " + out.Rel
		out.Entry = rawEntry(raw, fi, "binary")
	case t.isMedia():
		return e.readMedia(ctx, out, raw, fi, spec)
	case t == fileSVG && len(snap.Text) > maxSVGText:
		out.Message = out.Rel + " is an SVG file over 1 MB; its content is not shown."
		out.Display = out.Message
		entry := entryFor(snap, false, true, "")
		out.Entry = &entry
	case t == fileNotebook:
		rendered, err := renderNotebook(snap.Text)
		if err != nil {
			msg := fmt.Sprintf("Could not read %s: %v", abs, err)
			out.Err, out.ErrDisplay = NewError(errorReadContentFailure, msg), msg
			return out, nil
		}
		if out.Err = out.window(rendered, spec); out.Err == nil {
			entry := entryFor(snap, !out.Window.Truncated, false, "notebook")
			out.Entry = &entry
		}
	default:
		if out.Err = out.window(snap.Text, spec); out.Err == nil {
			entry := entryFor(snap, !out.Window.Truncated, true, "")
			out.Entry = &entry
		}
	}
	return out, nil
}

// window fills out.Window from text, or returns the offset error.
func (out *fileContent) window(text string, spec readSpec) *ToolError {
	w, terr := windowText(text, spec.Offset, spec.Limit, spec.Budget)
	if terr != nil {
		out.ErrDisplay = terr.Message
		return terr
	}
	out.Windowed, out.Window = true, w
	return nil
}

// readMedia handles image, audio, video and PDF files whose bytes are raw.
func (e *Env) readMedia(ctx context.Context, out fileContent, raw []byte, fi fs.FileInfo, spec readSpec) (fileContent, error) {
	noun := out.Type.noun()
	out.Entry = rawEntry(raw, fi, noun)
	if !e.acceptsModality(out.Type) {
		if out.Type == filePDF {
			text, ok, failure, err := pdfText(ctx, out.Path)
			switch {
			case err != nil:
				return out, err
			case failure != "":
				msg := fmt.Sprintf("Could not read %s: %s", out.Path, failure)
				out.Err, out.ErrDisplay, out.Entry = NewError(errorReadContentFailure, msg), msg, nil
				return out, nil
			case ok:
				if out.Err = out.window(text, spec); out.Err != nil {
					out.Entry = nil
				} else {
					out.Entry.Full = !out.Window.Truncated
				}
				return out, nil
			}
		}
		out.Message = fmt.Sprintf("[Skipped %s file %q: the current model does not accept %s input, so its content cannot be shown.]",
			noun, filepath.Base(out.Path), noun)
		out.Display = fmt.Sprintf("Skipped %s file: %s (the model does not accept %s input)", noun, out.Rel, noun)
		return out, nil
	}
	if base64.StdEncoding.EncodedLen(len(raw)) > maxInlineData {
		msg := out.Path + " is too large to send: over 10 MB once base64-encoded."
		out.Err, out.ErrDisplay, out.Entry = NewError(errorFileTooLarge, msg), msg, nil
		return out, nil
	}
	out.Media = &InlineData{MimeType: mimeType(out.Path), Data: base64.StdEncoding.EncodeToString(raw),
		DisplayName: filepath.Base(out.Path)}
	out.Display = fmt.Sprintf("Read %s file: %s", noun, out.Rel)
	return out, nil
}

// rawEntry is the ledger entry of a file whose content is its bytes
// (binary, media, PDF): not editable, hashed over the bytes.
func rawEntry(raw []byte, fi fs.FileInfo, kind string) *ledgerEntry {
	e := &ledgerEntry{Source: workspace.FromDisk, Hash: sha256.Sum256(raw), Full: true, Kind: kind}
	if fi != nil {
		e.ModTime, e.Size = fi.ModTime(), fi.Size()
	}
	return e
}

// rawKind reports the ledger kinds hashed over the file's bytes rather than
// its decoded text.
func rawKind(kind string) bool {
	switch kind {
	case "binary", "image", "audio", "video", "PDF":
		return true
	}
	return false
}

// readFailure maps a read error to §2.6's table: the error and its display.
func readFailure(abs string, err error) (*ToolError, string) {
	var nr *workspace.NotRegularError
	var tl *workspace.TooLargeError
	switch {
	case pathMissing(err):
		return NewError(errorFileNotFound, abs+" does not exist."), "File not found."
	case errors.Is(err, workspace.ErrEscaped):
		return NewError(errorPathNotInWorkspace, fmt.Sprintf("Path is outside the workspace: %s. It changed after it was checked (a symlink now leads out of the workspace).", abs)), "Path is outside the workspace."
	case errors.As(err, &nr) && nr.Dir:
		return NewError(errorTargetIsDirectory, abs+" is a directory, not a file."), "Path is a directory."
	case errors.As(err, &nr):
		return NewError(errorReadContentFailure, abs+" is not a regular file (it is a FIFO, socket or device)."), "Not a regular file."
	case errors.As(err, &tl):
		msg := fmt.Sprintf("%s is too large to read: %.2f MB, over the 10 MB limit.", abs, float64(tl.Size)/(1<<20))
		return NewError(errorFileTooLarge, msg), msg
	}
	msg := fmt.Sprintf("Could not read %s: %s", abs, readErrReason(err))
	return NewError(errorReadContentFailure, msg), msg
}

// pathMissing reports whether err says the path does not exist, including
// a path that runs through a file (ENOTDIR).
func pathMissing(err error) bool {
	return workspace.IsNotExist(err) || errors.Is(err, syscall.ENOTDIR)
}

// readErrReason is the part of a file-system error worth showing: the cause
// without the operation and path the message already names.
func readErrReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// windowText cuts the window of §2.7 out of text: lines are the
// "\n"-separated segments, each right-trimmed of spaces, tabs and "\r";
// from offset, at most limit lines (<= 0: no limit), while the lines
// joined with "\n" fit in budget characters (<= 0: no budget). The first
// line that does not fit is cut to max(budget-used-1, 10) characters
// followed by "... [truncated]", and the window ends there. An offset at
// or past the number of lines is an invalid_tool_params error.
func windowText(text string, offset, limit, budget int) (textWindow, *ToolError) {
	total := strings.Count(text, "\n") + 1
	if offset < 0 {
		offset = 0
	}
	if offset >= total {
		return textWindow{}, InvalidParams(fmt.Sprintf("The file has %d lines, so offset %d is past its end.", total, offset))
	}
	rest := text
	for range offset {
		rest = rest[strings.IndexByte(rest, '\n')+1:]
	}
	var sb strings.Builder
	if budget > 0 {
		sb.Grow(min(len(rest), budget*utf8.UTFMax) + len(truncatedMark))
	} else {
		sb.Grow(len(rest))
	}
	w := textWindow{Start: offset + 1, Total: total}
	used, n := 0, 0
	for {
		line, next, more := strings.Cut(rest, "\n")
		line = strings.TrimRight(line, " \t\r")
		sep := 0
		if n > 0 {
			sep = 1
		}
		if budget > 0 {
			size := utf8.RuneCountInString(line)
			if used+sep+size > budget {
				keep := max(budget-used-1, 10)
				if sep == 1 {
					sb.WriteByte('\n')
				}
				sb.WriteString(prefixRunes(line, keep))
				sb.WriteString(truncatedMark)
				n++
				w.Cut = true
				break
			}
			used += sep + size
		}
		if sep == 1 {
			sb.WriteByte('\n')
		}
		sb.WriteString(line)
		n++
		if !more || (limit > 0 && n >= limit) {
			break
		}
		rest = next
	}
	w.Text = sb.String()
	w.End = offset + n
	w.Truncated = offset > 0 || w.End < total || w.Cut
	return w, nil
}

// prefixRunes returns the first n characters of s.
func prefixRunes(s string, n int) string {
	i := 0
	for range n {
		if i >= len(s) {
			break
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// pdfText extracts a PDF's text with pdftotext when it is on PATH; ok is
// false when it is not. A run that fails gives the reason in failure; err
// is only ever ctx's.
func pdfText(ctx context.Context, path string) (text string, ok bool, failure string, err error) {
	bin, lerr := exec.LookPath("pdftotext")
	if lerr != nil {
		return "", false, "", nil
	}
	rctx, cancel := context.WithTimeout(ctx, pdfTimeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, bin, "-layout", "-l", "20", "--", path, "-")
	cmd.Env = ChildEnv(nil) // no API keys for a parser of untrusted files
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return "", false, "", ctx.Err()
	}
	if runErr != nil {
		reason := strings.TrimSpace(stderr.String())
		if rctx.Err() != nil {
			reason = "it ran past 30 s"
		} else if reason == "" {
			reason = runErr.Error()
		}
		reason, _, _ = strings.Cut(reason, "\n")
		return "", false, "pdftotext failed: " + reason, nil
	}
	text = strings.ToValidUTF8(stdout.String(), "\uFFFD")
	if utf8.RuneCountInString(text) > pdfTextMax {
		text = prefixRunes(text, pdfTextMax) + fmt.Sprintf("\n\n[PDF text cut at %d characters]", pdfTextMax)
	}
	return text, true, "", nil
}

// notebook is the part of the Jupyter format the rendering reads.
type notebook struct {
	Cells    []notebookCell `json:"cells"`
	Metadata struct {
		Kernelspec struct {
			Language string `json:"language"`
		} `json:"kernelspec"`
		LanguageInfo struct {
			Name string `json:"name"`
		} `json:"language_info"`
	} `json:"metadata"`
}

type notebookCell struct {
	CellType       string           `json:"cell_type"`
	ID             string           `json:"id"`
	Source         notebookText     `json:"source"`
	ExecutionCount *int             `json:"execution_count"`
	Outputs        []notebookOutput `json:"outputs"`
}

type notebookOutput struct {
	OutputType string                     `json:"output_type"`
	Text       notebookText               `json:"text"`
	Data       map[string]json.RawMessage `json:"data"`
	Ename      string                     `json:"ename"`
	Evalue     string                     `json:"evalue"`
}

// notebookText is a multiline string of the format: a string, or a list
// of strings to concatenate.
type notebookText string

func (t *notebookText) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = notebookText(s)
		return nil
	}
	var parts []string
	if err := json.Unmarshal(b, &parts); err != nil {
		return errors.New("a text field is neither a string nor a list of strings")
	}
	*t = notebookText(strings.Join(parts, ""))
	return nil
}

// renderNotebook turns a notebook's JSON into the text of §2.6.
func renderNotebook(src string) (string, error) {
	var nb notebook
	if err := json.Unmarshal([]byte(src), &nb); err != nil {
		return "", fmt.Errorf("it is not a valid notebook (%v)", err)
	}
	lang := nb.Metadata.Kernelspec.Language
	if lang == "" {
		lang = nb.Metadata.LanguageInfo.Name
	}
	if lang == "" {
		lang = "unknown language"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Jupyter Notebook (%s, %d %s)", lang, len(nb.Cells), readPlural(len(nb.Cells), "cell", "cells"))
	if len(nb.Cells) == 0 {
		sb.WriteString("\n\n(empty notebook)")
		return sb.String(), nil
	}
	outputLeft := notebookOutputMax
	for i, c := range nb.Cells {
		id := c.ID
		if id == "" {
			id = fmt.Sprint(i + 1)
		}
		sb.WriteString("\n\n")
		switch c.CellType {
		case "code":
			count := " "
			if c.ExecutionCount != nil {
				count = fmt.Sprint(*c.ExecutionCount)
			}
			fmt.Fprintf(&sb, "--- Code Cell %s [%s] ---\n", id, count)
		case "markdown":
			fmt.Fprintf(&sb, "--- Markdown Cell %s ---\n", id)
		default:
			fmt.Fprintf(&sb, "--- Raw Cell %s ---\n", id)
		}
		sb.WriteString(string(c.Source))
		if c.CellType != "code" || len(c.Outputs) == 0 {
			continue
		}
		out := cellOutputText(c.Outputs)
		limit := min(notebookCellOutputMax, outputLeft)
		if utf8.RuneCountInString(out) > limit {
			out = prefixRunes(out, limit) + truncatedMark
		}
		outputLeft -= min(utf8.RuneCountInString(out), outputLeft)
		sb.WriteString("\nOutput:\n")
		sb.WriteString(out)
	}
	return sb.String(), nil
}

// cellOutputText joins a code cell's text outputs; an output with only
// non-text data is named by its MIME types.
func cellOutputText(outputs []notebookOutput) string {
	var parts []string
	for _, o := range outputs {
		switch o.OutputType {
		case "stream":
			parts = append(parts, strings.TrimRight(string(o.Text), "\n"))
		case "error":
			parts = append(parts, o.Ename+": "+o.Evalue)
		default:
			if raw, ok := o.Data["text/plain"]; ok {
				var t notebookText
				if json.Unmarshal(raw, &t) == nil {
					parts = append(parts, strings.TrimRight(string(t), "\n"))
					continue
				}
			}
			mimes := make([]string, 0, len(o.Data))
			for m := range o.Data {
				mimes = append(mimes, m)
			}
			slices.Sort(mimes)
			parts = append(parts, "[non-text output: "+strings.Join(mimes, ", ")+"]")
		}
	}
	return strings.Join(parts, "\n")
}

// readPlural picks the singular for n == 1.
func readPlural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
