package langserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// covers reports whether s serves the document at path: its spec covers
// the file and the file is inside its root.
func covers(s *Server, path string) bool {
	_, ok := s.spec.Covers(path)
	return ok && within(s.root, path)
}

// DidOpen gives the servers the text of a document the editor opened,
// and returns the version it now has. Running servers covering it get
// didOpen (or didChange when they have it open already); servers started
// later get it when they start.
func (m *Manager) DidOpen(path, text string) int32 {
	return m.setText(filepath.Clean(path), text)
}

// DidChange gives the servers the new full text of an open document, and
// returns its new version: the one to pass to WaitDiagnostics.
func (m *Manager) DidChange(path, text string) int32 {
	return m.setText(filepath.Clean(path), text)
}

func (m *Manager) setText(path, text string) int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.ContainsFunc(m.opts.Specs, func(s Spec) bool { _, ok := s.Covers(path); return ok }) {
		// No server will want it: keep no copy of the text.
		return m.nextVersionLocked(path)
	}
	d := m.docs[path]
	if d == nil {
		d = &document{}
		m.docs[path] = d
	}
	d.editor = true
	if d.version != 0 && d.text == text {
		return d.version
	}
	d.text = text
	d.version = m.nextVersionLocked(path)
	for _, s := range m.runningLocked(path) {
		m.syncLocked(s, path, d)
	}
	return d.version
}

// DidClose says the editor closed a document: the servers close it, and
// from then on see the file as Options.Text gives it.
func (m *Manager) DidClose(path string) {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.docs, path)
	for _, sl := range m.slots {
		s := sl.cur
		if s == nil {
			continue
		}
		s.mu.Lock()
		_, open := s.open[path]
		delete(s.open, path)
		s.mu.Unlock()
		if open {
			s.notify("textDocument/didClose", map[string]any{"textDocument": map[string]string{"uri": fileURI(path)}})
		}
	}
}

// Wrote says that path was written on disk (by a tool, or saved). The
// servers whose root holds it are told (workspace/didChangeWatchedFiles),
// and a document opened from Options.Text is read again. It returns the
// document's version, 0 when no server has it open.
func (m *Manager) Wrote(path string) int32 {
	path = filepath.Clean(path)
	m.mu.Lock()
	d := m.docs[path]
	refresh := d != nil && !d.editor
	m.mu.Unlock()
	var text string
	var textErr error
	if refresh {
		text, textErr = m.text(path)
	}
	kind := 2 // Changed
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		kind = 3 // Deleted
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, sl := range m.slots {
		if s := sl.cur; s != nil && within(s.root, path) {
			s.notify("workspace/didChangeWatchedFiles", map[string]any{
				"changes": []map[string]any{{"uri": fileURI(path), "type": kind}},
			})
		}
	}
	if refresh && textErr == nil && m.docs[path] == d && d.text != text {
		d.text = text
		d.version = m.nextVersionLocked(path)
		for _, s := range m.runningLocked(path) {
			m.syncLocked(s, path, d)
		}
	}
	if d = m.docs[path]; d == nil {
		return 0
	}
	return d.version
}

// ensureOpen opens path in s when it is not open there yet. A document
// the editor does not hold is read again each time it is asked about, so
// that a change on disk nobody reported (a shell command, git) does not
// leave the server on old text.
func (m *Manager) ensureOpen(s *Server, path string) error {
	m.mu.Lock()
	d := m.docs[path]
	m.mu.Unlock()
	if d == nil || !d.editor {
		text, err := m.text(path)
		if err != nil {
			return fmt.Errorf("open %s in %s: %w", path, s.spec.Name, err)
		}
		m.mu.Lock()
		switch cur := m.docs[path]; {
		case cur == nil:
			m.docs[path] = &document{text: text, version: m.nextVersionLocked(path)}
		case !cur.editor && cur.text != text:
			cur.text = text
			cur.version = m.nextVersionLocked(path)
		}
		m.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if d = m.docs[path]; d != nil {
		m.syncLocked(s, path, d)
		// Other servers that have it open get the new text too.
		for _, r := range m.runningLocked(path) {
			r.mu.Lock()
			_, open := r.open[path]
			r.mu.Unlock()
			if r != s && open {
				m.syncLocked(r, path, d)
			}
		}
	}
	return nil
}

func (m *Manager) text(path string) (string, error) {
	if m.opts.Text != nil {
		return m.opts.Text(path)
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

func (m *Manager) nextVersionLocked(path string) int32 {
	m.versions[path]++
	return m.versions[path]
}

// runningLocked are the running servers that cover path.
func (m *Manager) runningLocked(path string) []*Server {
	var out []*Server
	for _, sl := range m.slots {
		if s := sl.cur; s != nil && covers(s, path) {
			out = append(out, s)
		}
	}
	return out
}

// syncLocked brings s up to d: didOpen when s does not have the document
// open, didChange (the full text) when it has an older version. It is
// called with m.mu held, which orders the notifications of every
// document as its versions.
func (m *Manager) syncLocked(s *Server, path string, d *document) {
	s.mu.Lock()
	sd := s.open[path]
	if sd != nil && sd.version == d.version {
		s.mu.Unlock()
		return
	}
	if sd == nil {
		sd = &sentDoc{}
		s.open[path] = sd
	}
	opened := sd.version != 0
	sd.version = d.version
	sd.sentAt = append(sd.sentAt, versionSeq{d.version, s.pubSeq})
	if len(sd.sentAt) > maxSentVersions {
		sd.sentAt = sd.sentAt[len(sd.sentAt)-maxSentVersions:]
	}
	s.mu.Unlock()
	uri := fileURI(path)
	if opened {
		s.notify("textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": uri, "version": d.version},
			"contentChanges": []map[string]string{{"text": d.text}},
		})
		return
	}
	lang, _ := s.spec.Covers(path)
	s.notify("textDocument/didOpen", map[string]any{
		"textDocument": map[string]any{"uri": uri, "languageId": lang, "version": d.version, "text": d.text},
	})
}
