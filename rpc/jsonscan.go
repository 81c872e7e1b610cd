package rpc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"sort"
)

// A scan of one message body, in one pass and without copying it: it
// validates the body exactly as json.Valid does (the same grammar, the
// same nesting limit) and, when the body is an object, keeps where each of
// the envelope's members lies in it. encoding/json reads a string one byte
// at a time through a state machine; a 50 MB document in a didOpen spent a
// second or more there, on the connection's read path, before any other
// message could be read. Here the bytes of a string are skipped eight at a
// time, stopping only at a quote, a backslash or a control character.

// maxJSONDepth is encoding/json's nesting limit: json.Valid refuses a
// value nested deeper.
const maxJSONDepth = 10000

// envelope is where the JSON-RPC members of a message body lie: each is
// the raw value (a slice of the body, never a copy), nil when absent. A
// member given twice counts with its last value, as with encoding/json.
type envelope struct {
	// object is false for a valid body that is not a JSON object.
	object                                    bool
	first                                     byte // the body's first byte that is not white space
	jsonrpc, id, method, params, result, errv []byte
	// long are the spans in the body of its strings of longString bytes
	// or more, in order, so that finding a member later need not scan
	// them again (jsonValue).
	long [][2]int
}

// longString is the length past which the scan notes where a string lies.
const longString = 64 << 10

// scanEnvelope validates body and finds its envelope. ok is false when
// body is not valid JSON.
func scanEnvelope(body []byte) (env envelope, ok bool) {
	i := skipSpace(body, 0)
	if i == len(body) {
		return env, false
	}
	env.first = body[i]
	var end int
	if body[i] == '{' {
		env.object = true
		end, ok = scanObject(body, i, 1, &env, nil)
	} else {
		end, ok = scanValue(body, i, 0, &env.long)
	}
	if !ok || skipSpace(body, end) != len(body) {
		return envelope{}, false
	}
	return env, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanValue returns the end of the value that starts at b[i]; depth is
// the number of containers around it. Long strings are noted in long
// unless it is nil.
func scanValue(b []byte, i, depth int, long *[][2]int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		end, ok := scanString(b, i)
		if ok && long != nil && end-i >= longString {
			*long = append(*long, [2]int{i, end})
		}
		return end, ok
	case c == '{':
		return scanObject(b, i, depth+1, nil, long)
	case c == '[':
		return scanArray(b, i, depth+1, long)
	case c == '-' || ('0' <= c && c <= '9'):
		return scanNumber(b, i)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	}
	return i, false
}

// scanObject scans the object at b[i]. With env set, it records the
// envelope's members (and long strings in env.long).
func scanObject(b []byte, i, depth int, env *envelope, long *[][2]int) (int, bool) {
	if env != nil {
		long = &env.long
	}
	if depth > maxJSONDepth {
		return i, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		kEnd, ok := scanString(b, i)
		if !ok {
			return kEnd, false
		}
		key := b[i+1 : kEnd-1]
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		i = skipSpace(b, i+1)
		vStart := i
		if i, ok = scanValue(b, i, depth, long); !ok {
			return i, false
		}
		if env != nil {
			env.set(key, b[vStart:i])
		}
		var end bool
		if i, end, ok = nextItem(b, i, '}'); !ok || end {
			return i, ok
		}
	}
}

// nextItem moves past what follows a member or an element: a ',' (then
// more follow) or close (end). Anything else is malformed (not ok).
func nextItem(b []byte, i int, close byte) (next int, end, ok bool) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case ',':
		return skipSpace(b, i+1), false, true
	case close:
		return i + 1, true, true
	}
	return i, false, false
}

func (env *envelope) set(key, value []byte) {
	name := string(key)
	if bytes.IndexByte(key, '\\') >= 0 {
		// A member name spelled with escapes means the same name.
		name = unescapedKey(key)
	}
	switch name {
	case "jsonrpc":
		env.jsonrpc = value
	case "id":
		env.id = value
	case "method":
		env.method = value
	case "params":
		env.params = value
	case "result":
		env.result = value
	case "error":
		env.errv = value
	}
}

func scanArray(b []byte, i, depth int, long *[][2]int) (int, bool) {
	if depth > maxJSONDepth {
		return i, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = scanValue(b, i, depth, long); !ok {
			return i, false
		}
		var end bool
		if i, end, ok = nextItem(b, i, ']'); !ok || end {
			return i, ok
		}
	}
}

const (
	swarOnes = 0x0101010101010101
	swarHigh = 0x8080808080808080
)

// swarSpecial has the high bit set in each byte of w that is a quote, a
// backslash or under 0x20 (the lowest such byte is found exactly; bytes
// above it may be flagged falsely, which only costs a closer look).
func swarSpecial(w uint64) uint64 {
	q := w ^ (swarOnes * '"')
	bs := w ^ (swarOnes * '\\')
	return ((q - swarOnes) &^ q & swarHigh) | ((bs - swarOnes) &^ bs & swarHigh) | ((w - swarOnes*0x20) &^ w & swarHigh)
}

// scanString scans the string at b[i] (its opening quote).
func scanString(b []byte, i int) (int, bool) {
	i++
	for {
		for i+8 <= len(b) {
			m := swarSpecial(binary.LittleEndian.Uint64(b[i:]))
			if m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			return i, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return i, false
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return i, false
					}
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		default:
			i++
		}
	}
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func scanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

func scanLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// jsonValue is a valid JSON value and where its long strings lie in it,
// as the scan of its message found them: finding a member in a didOpen of
// 50 MB then skips the document's text instead of scanning it again.
type jsonValue struct {
	raw  []byte
	long [][2]int // spans in raw, in order
}

// sub is the value in raw[start:end].
func (v jsonValue) sub(start, end int) jsonValue {
	out := jsonValue{raw: v.raw[start:end]}
	for _, sp := range v.long {
		if sp[0] >= start && sp[1] <= end {
			out.long = append(out.long, [2]int{sp[0] - start, sp[1] - start})
		}
	}
	return out
}

// member finds the value of the member named key (the last one, as
// decoders see it) of v, an object, and returns its span in v.raw.
func (v jsonValue) member(key string) (start, end int, ok bool) {
	obj := v.raw
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, 0, false
	}
	i = skipSpace(obj, i+1)
	for i < len(obj) && obj[i] == '"' {
		kEnd := v.skip(i)
		k := obj[i+1 : kEnd-1]
		i = skipSpace(obj, skipSpace(obj, kEnd)+1) // past the colon
		vEnd := v.skip(i)
		if string(k) == key || (bytes.IndexByte(k, '\\') >= 0 && unescapedKey(k) == key) {
			start, end, ok = i, vEnd, true
		}
		i = skipSpace(obj, vEnd)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return start, end, ok
}

// elements returns the spans of the elements of v, an array.
func (v jsonValue) elements() [][2]int {
	arr := v.raw
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil
	}
	var out [][2]int
	i = skipSpace(arr, i+1)
	for i < len(arr) && arr[i] != ']' {
		end := v.skip(i)
		out = append(out, [2]int{i, end})
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	return out
}

// skip returns the end of the value at v.raw[i], jumping over the long
// strings it knows.
func (v jsonValue) skip(i int) int {
	b := v.raw
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			i = v.stringEnd(i)
		case '{', '[':
			depth++
			i++
		case '}', ']':
			depth--
			i++
		default:
			if depth == 0 { // a number or a literal
				for i < len(b) && !isDelimiter(b[i]) {
					i++
				}
				return i
			}
			i++
		}
		if depth == 0 {
			return i
		}
	}
	return i
}

func (v jsonValue) stringEnd(i int) int {
	k := sort.Search(len(v.long), func(k int) bool { return v.long[k][0] >= i })
	if k < len(v.long) && v.long[k][0] == i {
		return v.long[k][1]
	}
	end, _ := scanString(v.raw, i)
	return end
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r', ':':
		return true
	}
	return false
}

func unescapedKey(k []byte) string {
	var s string
	_ = json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &s)
	return s
}
