package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// MaxMessageSize is the largest message body the server accepts (64 MiB,
// protocol.md §1). A larger one is skipped without being held in memory.
const MaxMessageSize = 64 << 20

// maxHeaderBytes bounds one header block, so a peer that never sends the
// blank line cannot make the server buffer without limit.
const maxHeaderBytes = 8 << 10

// stream is the server's jsonrpc2.ObjectStream. sourcegraph/jsonrpc2 closes
// the connection whenever ReadObject fails, so this stream never returns a
// decoding error: it answers the peer itself (-32700 for a body that is not
// JSON, -32600 for JSON that is not a valid message or a frame that is too
// large) and goes on to the next frame. Only a transport failure (EOF, a
// closed pipe) ends the connection.
type stream struct {
	r      *bufio.Reader
	closer io.Closer

	// mu serialises writes: responses from handler goroutines, server
	// requests and the stream's own error answers share one writer.
	mu sync.Mutex
	w  *bufio.Writer

	// ndjson selects ACP framing (one message per line) instead of LSP
	// Content-Length headers.
	ndjson bool

	// onBadMessage, when set, is told about every message the stream
	// answered itself, for the server's log.
	onBadMessage func(code int64, reason string)

	// limit is the largest body accepted: MaxMessageSize, smaller in
	// tests.
	limit int
	// onLarge, when set, is told when a line over the limit was
	// refused: the memory it took up to the limit is garbage now.
	onLarge func()

	// keepParams: a request's params do not go through jsonrpc2, which
	// decodes them into maps and encodes them again (several copies of a
	// document in a didOpen, at several times its size); they wait in
	// held for the handler instead (takeParams).
	keepParams bool
	// held is the params of the request ReadObject returned last, tagged
	// with a number that jsonrpc2 carries to the handler in the
	// request's meta. Only the read goroutine uses it.
	held struct {
		seq    uint64
		params jsonValue
	}
}

func newStream(r io.Reader, w io.Writer, c io.Closer, ndjson bool) *stream {
	return &stream{r: bufio.NewReaderSize(r, 64<<10), w: bufio.NewWriterSize(w, 64<<10), closer: c, ndjson: ndjson, limit: MaxMessageSize}
}

// WriteObject implements jsonrpc2.ObjectStream. jsonrpc2's messages
// marshal themselves (their params already encoded); calling MarshalJSON
// directly saves json.Marshal's two copies of the result (validate and
// compact, then copy out), which for a notification that carries a large
// file are megabytes each.
func (s *stream) WriteObject(obj interface{}) error {
	var data []byte
	var err error
	if m, ok := obj.(json.Marshaler); ok {
		data, err = m.MarshalJSON()
	} else {
		data, err = json.Marshal(obj)
	}
	if err != nil {
		return err
	}
	return s.writeRaw(data)
}

func (s *stream) writeRaw(data []byte) error { return s.writeParts(data) }

// writeParts writes one message whose body is the concatenation of parts,
// without joining them first.
func (s *stream) writeParts(parts ...[]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ndjson {
		n := 0
		for _, p := range parts {
			n += len(p)
		}
		if _, err := fmt.Fprintf(s.w, "Content-Length: %d\r\n\r\n", n); err != nil {
			return err
		}
	}
	for _, p := range parts {
		if _, err := s.w.Write(p); err != nil {
			return err
		}
	}
	if s.ndjson {
		if err := s.w.WriteByte('\n'); err != nil {
			return err
		}
	}
	return s.w.Flush()
}

// notify writes a notification with params encoded once. jsonrpc2's
// Notify encodes the params, then the message around them again, each
// time into a growing buffer and out of it: for a session update that
// carries a file of megabytes (a write's content, its diff) that is
// several copies of it at once.
func (s *stream) notify(method string, params any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return err
	}
	head, err := json.Marshal(method)
	if err != nil {
		return err
	}
	return s.writeParts([]byte(`{"jsonrpc":"2.0","method":`), head, []byte(`,"params":`), body, []byte("}"))
}

// Close implements jsonrpc2.ObjectStream.
func (s *stream) Close() error {
	if s.closer == nil {
		return nil
	}
	return s.closer.Close()
}

// ReadObject implements jsonrpc2.ObjectStream. It returns only transport
// errors; everything wrong with a message is answered here.
func (s *stream) ReadObject(v interface{}) error {
	for {
		body, err := s.readFrame()
		if err != nil {
			var fe *frameError
			if errors.As(err, &fe) {
				if fe.code != 0 {
					s.answer(nil, fe.code, fe.msg)
				}
				continue
			}
			return err
		}
		env, code, msg, id := parseMessage(body)
		if code != 0 {
			if msg != "" {
				s.answer(id, code, msg)
			}
			continue
		}
		dec := body
		if s.keepParams && env.method != nil {
			dec = s.holdParams(body, env)
		}
		if err := json.Unmarshal(dec, v); err != nil {
			// parseMessage accepts what jsonrpc2 can decode; this is a
			// last line of defence, never a reason to drop the connection.
			s.answer(messageID(body), jsonrpc2.CodeInvalidRequest, "invalid request: "+err.Error())
			continue
		}
		return nil
	}
}

// holdParams keeps the params of the request env for takeParams and
// returns the message to hand to jsonrpc2 in its place: the same request
// without params, whose meta names the held ones.
func (s *stream) holdParams(body []byte, env envelope) []byte {
	s.held.seq++
	// params is a slice of body: the long strings' spans shift by its
	// offset.
	s.held.params = jsonValue{raw: body, long: env.long}
	if env.params != nil {
		at := cap(body) - cap(env.params)
		s.held.params = s.held.params.sub(at, at+len(env.params))
	} else {
		s.held.params = jsonValue{}
	}
	small := make([]byte, 0, 64+len(env.method)+len(env.id))
	small = append(small, `{"jsonrpc":"2.0","method":`...)
	small = append(small, env.method...)
	if env.id != nil {
		small = append(small, `,"id":`...)
		small = append(small, env.id...)
	}
	small = append(small, `,"meta":`...)
	small = strconv.AppendUint(small, s.held.seq, 10)
	return append(small, '}')
}

// takeParams returns the params held for jr (nil when it had none) and
// forgets them. ok is false when jr did not come through holdParams.
func (s *stream) takeParams(jr *jsonrpc2.Request) (params jsonValue, ok bool) {
	if !s.keepParams || jr.Meta == nil || string(*jr.Meta) != strconv.FormatUint(s.held.seq, 10) {
		return jsonValue{}, false
	}
	params = s.held.params
	s.held.params = jsonValue{}
	return params, true
}

// frameError is a framing problem that the stream recovered from. Code 0
// means it was answered already.
type frameError struct {
	code int64
	msg  string
}

func (e *frameError) Error() string { return e.msg }

// readFrame returns the next message body.
func (s *stream) readFrame() ([]byte, error) {
	if s.ndjson {
		return s.readLine()
	}
	length := -1
	headerBytes := 0
	sawHeader := false
	var bad string
	for {
		line, err := s.r.ReadString('\n')
		headerBytes += len(line)
		if err != nil {
			if err == io.EOF && (line != "" || sawHeader) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if headerBytes > maxHeaderBytes {
			s.skipToBlankLine()
			return nil, &frameError{code: jsonrpc2.CodeParseError, msg: "parse error: header block over 8 KiB"}
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if !sawHeader {
				continue // stray blank line between frames
			}
			break
		}
		sawHeader = true
		// After a frame whose Content-Length overstated its body, the next
		// header arrives glued to leftover bytes; find it to resync.
		// The search folds ASCII letters only: a Unicode lower-casing
		// changes the byte length of some letters and of invalid UTF-8,
		// so an index into the folded copy would not fit the line.
		if i := indexASCIIFold(line, "content-length:"); i > 0 {
			line = line[i:]
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			bad = fmt.Sprintf("malformed header line %q", truncate(line, 60))
			continue
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			if err != nil || n < 0 {
				bad = fmt.Sprintf("invalid Content-Length %q", truncate(strings.TrimSpace(value), 40))
				continue
			}
			length = int(min(n, int64(1)<<62))
		}
	}
	if bad != "" && length < 0 {
		return nil, &frameError{code: jsonrpc2.CodeParseError, msg: "parse error: " + bad}
	}
	if length < 0 {
		return nil, &frameError{code: jsonrpc2.CodeParseError, msg: "parse error: missing Content-Length header"}
	}
	if length > s.limit {
		// Answer before the body goes by: a peer that announced 1 GiB
		// learns at once, not after sending it all. The body is then
		// skipped through a small buffer, never held.
		s.answer(nil, jsonrpc2.CodeInvalidRequest, fmt.Sprintf("invalid request: message of %d bytes is over the 64 MiB limit", length))
		if _, err := io.CopyN(io.Discard, s.r, int64(length)); err != nil {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, &frameError{} // already answered
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(s.r, body); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return body, nil
}

// readLine reads one NDJSON message, skipping blank lines and discarding
// (without buffering) lines over the size limit.
//
// A line longer than the reader's buffer is gathered in blocks of
// lineBlock bytes and joined once at its end: growing one slice instead
// would copy it again at every growth (about five times its size
// allocated, over twice its size live at once, for a line of tens of
// megabytes). A line that passes the limit lets go of its blocks at once
// and is read on to its end without being kept.
func (s *stream) readLine() ([]byte, error) {
	for {
		var (
			first  []byte   // the line, while it fits in one fragment
			blocks [][]byte // the line, once it did not
			n      int      // its length so far
			over   bool
		)
		for {
			frag, err := s.r.ReadSlice('\n')
			switch {
			case over:
			case n+len(frag) > s.limit+1:
				over, first, blocks = true, nil, nil
			case n == 0 && err != bufio.ErrBufferFull:
				first = frag
			default:
				blocks = appendBlocks(blocks, frag)
			}
			n += len(frag)
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil {
				if err == io.EOF && n > 0 {
					if over {
						return nil, io.ErrUnexpectedEOF
					}
					break
				}
				return nil, err
			}
			break
		}
		if over {
			if s.onLarge != nil {
				s.onLarge()
			}
			return nil, &frameError{code: jsonrpc2.CodeInvalidRequest, msg: "invalid request: message over the 64 MiB limit"}
		}
		var line []byte
		if blocks == nil {
			// first is the reader's buffer, which the next read reuses.
			line = bytes.Clone(bytes.TrimSpace(first))
		} else {
			line = joinBlocks(blocks, n)
		}
		if len(line) == 0 {
			continue
		}
		return line, nil
	}
}

// lineBlock is the size of the blocks a long line is gathered in.
const lineBlock = 1 << 20

// appendBlocks appends p to the last block, starting new blocks as they
// fill.
func appendBlocks(blocks [][]byte, p []byte) [][]byte {
	for len(p) > 0 {
		if len(blocks) == 0 || len(blocks[len(blocks)-1]) == cap(blocks[len(blocks)-1]) {
			blocks = append(blocks, make([]byte, 0, lineBlock))
		}
		last := &blocks[len(blocks)-1]
		k := min(len(p), cap(*last)-len(*last))
		*last = append(*last, p[:k]...)
		p = p[k:]
	}
	return blocks
}

// joinBlocks returns the trimmed text of blocks (n bytes in all) in one
// slice of its size, letting go of each block once it is copied.
func joinBlocks(blocks [][]byte, n int) []byte {
	// Trim the white space at both ends without joining first.
	for len(blocks) > 0 {
		b := bytes.TrimLeft(blocks[0], " \t\r\n")
		n -= len(blocks[0]) - len(b)
		if blocks[0] = b; len(b) > 0 {
			break
		}
		blocks = blocks[1:]
	}
	for len(blocks) > 0 {
		k := len(blocks) - 1
		b := bytes.TrimRight(blocks[k], " \t\r\n")
		n -= len(blocks[k]) - len(b)
		if blocks[k] = b; len(b) > 0 {
			break
		}
		blocks = blocks[:k]
	}
	if n == 0 {
		return nil
	}
	line := make([]byte, 0, n)
	for i := range blocks {
		line = append(line, blocks[i]...)
		blocks[i] = nil
	}
	return line
}

func (s *stream) skipToBlankLine() {
	for {
		line, err := s.r.ReadString('\n')
		if err != nil || strings.TrimRight(line, "\r\n") == "" {
			return
		}
	}
}

// answer writes an error response that the stream produced itself.
func (s *stream) answer(id json.RawMessage, code int64, msg string) {
	if s.onBadMessage != nil {
		s.onBadMessage(code, msg)
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	resp := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc2.Error  `json:"error"`
	}{"2.0", id, jsonrpc2.Error{Code: code, Message: msg}}
	data, err := json.Marshal(resp)
	if err != nil {
		return
	}
	_ = s.writeRaw(data)
}

// parseMessage validates the JSON-RPC 2.0 envelope and returns where its
// members lie in body. It returns code 0 for a valid message; otherwise
// the error to answer and the message's id when it has a usable one.
func parseMessage(body []byte) (env envelope, code int64, msg string, id json.RawMessage) {
	env, ok := scanEnvelope(body)
	if !ok {
		return env, jsonrpc2.CodeParseError, "parse error: the message body is not valid JSON", nil
	}
	if !env.object {
		if env.first == '[' {
			return env, jsonrpc2.CodeInvalidRequest, "invalid request: batches are not supported", nil
		}
		return env, jsonrpc2.CodeInvalidRequest, "invalid request: a message must be a JSON object", nil
	}
	if env.id != nil && !validID(env.id) {
		return env, jsonrpc2.CodeInvalidRequest, "invalid request: id must be an integer, a string or null", nil
	}
	id = env.id
	if !isString(env.jsonrpc, "2.0") {
		return env, jsonrpc2.CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`, id
	}
	// A null method is no method, as encoding/json reads one.
	if string(env.method) == "null" {
		env.method = nil
	}
	isResponse := env.result != nil || env.errv != nil
	if env.method != nil {
		if !isString(env.method, "") || string(env.method) == `""` {
			return env, jsonrpc2.CodeInvalidRequest, "invalid request: method must be a non-empty string", id
		}
		if isResponse {
			return env, jsonrpc2.CodeInvalidRequest, "invalid request: a message cannot be both a request and a response", id
		}
		if p := env.params; len(p) > 0 && p[0] != '{' && p[0] != '[' && string(p) != "null" {
			return env, jsonrpc2.CodeInvalidRequest, "invalid request: params must be an object or an array", id
		}
		return env, 0, "", nil
	}
	if !isResponse {
		return env, jsonrpc2.CodeInvalidRequest, "invalid request: a message needs a method, a result or an error", id
	}
	if env.id == nil || string(env.id) == "null" {
		// A response we cannot route; answering it would start a loop of
		// error replies between two peers, so drop it silently.
		return env, jsonrpc2.CodeInvalidRequest, "", nil
	}
	return env, 0, "", nil
}

// isString reports whether raw is a JSON string, equal to want unless want
// is "".
func isString(raw []byte, want string) bool {
	if len(raw) == 0 || raw[0] != '"' {
		return false
	}
	if want == "" {
		return true
	}
	if string(raw) == `"`+want+`"` {
		return true
	}
	var s string
	return bytes.IndexByte(raw, '\\') >= 0 && json.Unmarshal(raw, &s) == nil && s == want
}

// validID accepts what both JSON-RPC and sourcegraph/jsonrpc2 can carry: a
// string, a non-negative integer, or null.
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if bytes.Equal(raw, []byte("null")) {
		return true
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	_, err := strconv.ParseUint(string(raw), 10, 64)
	return err == nil
}

func messageID(body []byte) json.RawMessage {
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &env) != nil || env.ID == nil || !validID(env.ID) {
		return nil
	}
	return env.ID
}

// indexASCIIFold is strings.Index with ASCII letters compared without
// case. lower must be lower-case ASCII. The result is an index into s.
func indexASCIIFold(s, lower string) int {
	n := len(lower)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lower[j] {
				break
			}
		}
		if j == n {
			return i
		}
	}
	return -1
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
