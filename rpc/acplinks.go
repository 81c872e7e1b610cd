package rpc

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"unicode"

	"github.com/qwen-ls/qwen-ls/session"
	"github.com/qwen-ls/qwen-ls/tools"
	"github.com/qwen-ls/qwen-ls/workspace"
)

// A prompt's resource_link blocks (ACP's "the agent may fetch this"): the
// link stays in the text as @path, set off from the text around it by a
// space, and the text of a linked file inside the workspace roots is
// attached after the prompt, as an embedded resource would be. The text is
// the client's when it serves reads (its unsaved buffer), else the
// overlay's or the disk's.

// acpLinkLimit bounds the text one link attaches.
const acpLinkLimit = 256 << 10

// acpAttachLinks rewrites the prompt's links as described above.
func (s *Server) acpAttachLinks(ctx context.Context, sessionID string, blocks []session.ContentBlock) []session.ContentBlock {
	hasLink := false
	for _, b := range blocks {
		hasLink = hasLink || b.Type == "resource_link"
	}
	if !hasLink {
		return blocks
	}
	var out, attached []session.ContentBlock
	for i, b := range blocks {
		if b.Type != "resource_link" {
			out = append(out, b)
			continue
		}
		path, isFile := linkPath(b.URI)
		ref := "@" + path
		if !isFile {
			ref = "@" + b.URI
		}
		if n := len(out); n > 0 && !endsInSpace(out[n-1]) {
			ref = " " + ref
		}
		if i+1 < len(blocks) && !startsWithSpace(blocks[i+1]) {
			ref += " "
		}
		out = append(out, session.ContentBlock{Type: "text", Text: ref})
		if !isFile {
			continue
		}
		text, note := s.acpLinkText(ctx, sessionID, path)
		if note != "" {
			out = append(out, session.ContentBlock{Type: "text", Text: fmt.Sprintf(" [%s was not attached: %s]", path, note)})
			continue
		}
		attached = append(attached, session.ContentBlock{Type: "resource", Resource: &session.EmbeddedResource{URI: b.URI, Text: text}})
	}
	return append(out, attached...)
}

// linkPath is a file: URI's path; isFile is false for other schemes.
func linkPath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || u.Path == "" {
		return uri, false
	}
	return filepath.Clean(u.Path), true
}

func endsInSpace(b session.ContentBlock) bool {
	if b.Type != "text" || b.Text == "" {
		return true
	}
	r := []rune(b.Text)
	return unicode.IsSpace(r[len(r)-1])
}

func startsWithSpace(b session.ContentBlock) bool {
	if b.Type != "text" || b.Text == "" {
		return true
	}
	return unicode.IsSpace([]rune(b.Text)[0])
}

// acpLinkText reads a linked file, or says why it was not attached.
func (s *Server) acpLinkText(ctx context.Context, sessionID, path string) (text, note string) {
	if !s.host.clientServes(path) {
		return "", "it is outside the workspace folders"
	}
	if err := s.host.SyncFile(ctx, sessionID, path); err != nil {
		if workspace.IsNotExist(err) {
			return "", "it does not exist"
		}
		return "", err.Error()
	}
	if b, ok := s.ws.Overlay.Get(path); ok {
		text = b.Text
	} else {
		raw, _, err := workspace.ReadFileBounded(path, workspace.MaxReadSize)
		if err != nil {
			if workspace.IsNotExist(err) {
				return "", "it does not exist"
			}
			return "", "it could not be read"
		}
		if tools.DetectFileType(filepath.Base(path), raw) == tools.FileBinary {
			return "", "it is not a text file"
		}
		text, _ = workspace.DecodeFileText(raw)
	}
	if len(text) > acpLinkLimit {
		cut := acpLinkLimit
		for cut > 0 && !utf8Start(text[cut]) {
			cut--
		}
		text = text[:cut] + fmt.Sprintf("\n[… cut: the file has %d bytes; the first %d are attached. Read the rest with read_file.]", len(text), cut)
	}
	return text, ""
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
