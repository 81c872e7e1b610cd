package langserver

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// Published is what a server last published for a document.
type Published struct {
	// URI is the document's URI as the server sent it.
	URI string
	// Version is the document version the diagnostics belong to; 0 when
	// the server sent none.
	Version int32
	// Diagnostics is the LSP Diagnostic array as the server sent it.
	Diagnostics json.RawMessage
}

type published struct {
	Published
	// seq is the server's publish count when this came.
	seq uint64
}

// sentDoc is what a server was sent of one document.
type sentDoc struct {
	version int32
	// sentAt maps each version sent to the server's publish count at
	// that moment: a publish without a version counts for the versions
	// sent before it (the last few kept).
	sentAt []versionSeq
}

type versionSeq struct {
	version int32
	seq     uint64
}

// maxSentVersions bounds sentDoc.sentAt.
const maxSentVersions = 32

// publish records a textDocument/publishDiagnostics.
func (s *Server) publish(params json.RawMessage) {
	var p struct {
		URI         string          `json:"uri"`
		Version     *int32          `json:"version"`
		Diagnostics json.RawMessage `json:"diagnostics"`
	}
	if json.Unmarshal(params, &p) != nil || p.URI == "" {
		return
	}
	if len(p.Diagnostics) == 0 || string(p.Diagnostics) == "null" {
		p.Diagnostics = json.RawMessage("[]")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pubSeq++
	d := &published{Published: Published{URI: p.URI, Diagnostics: p.Diagnostics}, seq: s.pubSeq}
	if p.Version != nil {
		d.Version = *p.Version
	}
	s.diags[docKey(p.URI)] = d
	close(s.changed)
	s.changed = make(chan struct{})
}

// Diagnostics is what the server last published for a document, given by
// URI or by path; ok is false when it has published nothing for it.
func (s *Server) Diagnostics(uri string) (p Published, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.diags[docKey(uri)]
	if !ok {
		return Published{}, false
	}
	return d.Published, true
}

// AllDiagnostics is the latest publication of every document the server
// has published for, in URI order.
func (s *Server) AllDiagnostics() []Published {
	s.mu.Lock()
	out := make([]Published, 0, len(s.diags))
	for _, d := range s.diags {
		out = append(out, d.Published)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Published) int {
		switch {
		case a.URI < b.URI:
			return -1
		case a.URI > b.URI:
			return 1
		}
		return 0
	})
	return out
}

// WaitDiagnostics waits until the server has published diagnostics of the
// document (given by URI or by path) for version or a later one, and
// returns them with fresh true. A server that sends no versions counts
// its first publication after version was sent. When max passes first,
// it returns what it has (possibly nothing) with fresh false; an error
// only when ctx ends or the server dies.
func (s *Server) WaitDiagnostics(ctx context.Context, uri string, version int32, max time.Duration) (p Published, fresh bool, err error) {
	key := docKey(uri)
	t := time.NewTimer(max)
	defer t.Stop()
	s.touch()
	for {
		s.mu.Lock()
		d, ok := s.diags[key]
		if ok {
			p = d.Published
		}
		done := ok && s.satisfiesLocked(key, d, version)
		ch := s.changed
		s.mu.Unlock()
		if done {
			return p, true, nil
		}
		select {
		case <-ch:
		case <-t.C:
			return p, false, nil
		case <-ctx.Done():
			return p, false, ctx.Err()
		case <-s.exited:
			return p, false, s.deadErr()
		}
	}
}

func (s *Server) satisfiesLocked(key string, d *published, version int32) bool {
	if d.Version != 0 {
		return d.Version >= version
	}
	sd, ok := s.open[key]
	if !ok {
		return false
	}
	for _, vs := range sd.sentAt {
		if vs.version >= version {
			return d.seq > vs.seq
		}
	}
	return false
}
