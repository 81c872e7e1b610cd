package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
)

// The canonical settings tree.
//
// A settings key may be written nested ({"tools": {"approvalMode": …}}),
// as one dotted key ({"tools.approvalMode": …}) or half and half
// ({"tools": {"webFetch.allowPrivateAddresses": …}}), and JSONC lets a
// file write the same key twice. Every settings layer is turned into one
// canonical tree, nested objects whose keys hold no dots, before anything
// reads it: the readers, the merge and the folder-trust filter all see the
// same tree, so no spelling can reach a reader past the filter.
//
// Where two entries of one object address the same place:
//   - the same key written twice: the later one wins;
//   - different spellings (a nested "tools" object and a "tools.x" key):
//     the keys of an object are applied fewest dots first, so the more
//     flattened spelling wins whatever the order in the file;
//   - and in both cases, when both values are objects they merge key by
//     key by these same rules instead of one replacing the other.
//
// Lists and scalars are leaves: a list is never merged with another in one
// layer (the union of some lists across layers is the merge's business).
//
// Some objects hold names, not settings: the keys of mcpServers are server
// names, which may contain dots, and a server's entry is the server's own
// configuration. Below such a point nothing is split; "mcpServers.a.b" is
// the server "a.b".

// opaquePoints are the top-level settings whose children are names rather
// than settings keys; nothing below them is split at dots. They are all
// top-level keys, so no other path needs tracking while normalising.
var opaquePoints = map[string]bool{"mcpServers": true}

// maxSettingsDepth bounds the nesting of a settings value.
const maxSettingsDepth = 10000

// settingsKeyPath splits key, found at the top of a layer (top) or in an
// object below it that is not inside an opaque point, into the path
// segments it addresses.
func settingsKeyPath(top bool, key string) []string {
	segs := strings.Split(key, ".")
	if top && len(segs) > 1 && opaquePoints[segs[0]] {
		return []string{segs[0], strings.Join(segs[1:], ".")}
	}
	return segs
}

// orderedObject is a JSON object with its entries in document order,
// duplicates kept.
type orderedObject struct {
	keys []string
	vals []any // *orderedObject, []any of the same, or a JSON scalar
}

// parseSettingsJSONC parses a settings file (JSON with comments and
// trailing commas, parseJSONC's rules and errors) into its canonical tree.
func parseSettingsJSONC(data []byte) (map[string]any, error) {
	clean, err := standardSettings(data)
	if err != nil {
		return nil, err
	}
	if clean == nil {
		return map[string]any{}, nil
	}
	// Decoding checks the values and gives parseJSONC's errors; the
	// ordered pass below then reads text known to be one valid object.
	if _, err := decodeSettings(clean); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(clean))
	v, err := readOrdered(dec, 0)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(*orderedObject)
	if !ok {
		return nil, errors.New("the settings must be a JSON object")
	}
	return canonicalObject(obj, true, false), nil
}

// readOrdered reads one JSON value from dec, keeping the entries of
// objects in order.
func readOrdered(dec *json.Decoder, depth int) (any, error) {
	if depth > maxSettingsDepth {
		return nil, errors.New("the settings are nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		obj := &orderedObject{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, ok := kt.(string)
			if !ok {
				return nil, errors.New("an object key is not a string")
			}
			v, err := readOrdered(dec, depth+1)
			if err != nil {
				return nil, err
			}
			obj.keys = append(obj.keys, k)
			obj.vals = append(obj.vals, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return obj, nil
	case '[':
		list := []any{}
		for dec.More() {
			v, err := readOrdered(dec, depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return list, nil
	}
	return nil, errors.New("unexpected " + d.String())
}

// canonicalObject builds the canonical tree of obj (top: obj is the whole
// layer). plain objects hold data, not settings: their keys are never
// split (objects in lists, and everything below an opaque point).
func canonicalObject(obj *orderedObject, top, plain bool) map[string]any {
	// The same key twice: the later wins, objects concatenate (so that
	// their own entries merge by the same rules, in order). A
	// concatenation is built once per key and appended to in place, so a
	// key written many times costs no more than its entries.
	byKey := map[string]any{}
	owned := map[string]bool{}
	var order []string
	for i, k := range obj.keys {
		v := obj.vals[i]
		prev, seen := byKey[k]
		if !seen {
			order = append(order, k)
		}
		po, pok := prev.(*orderedObject)
		vo, vok := v.(*orderedObject)
		if seen && pok && vok {
			if !owned[k] {
				po = &orderedObject{keys: slices.Clone(po.keys), vals: slices.Clone(po.vals)}
				byKey[k], owned[k] = po, true
			}
			po.keys = append(po.keys, vo.keys...)
			po.vals = append(po.vals, vo.vals...)
			continue
		}
		byKey[k], owned[k] = v, false
	}
	out := map[string]any{}
	for _, k := range sortedForCanon(order) {
		path, childPlain := []string{k}, plain
		if !plain {
			path = settingsKeyPath(top, k)
			childPlain = top && opaquePoints[path[0]]
		}
		insertCanonical(out, path, canonicalValue(byKey[k], childPlain))
	}
	return out
}

// canonicalValue turns a value read in order, found below the top of a
// layer, into the canonical tree.
func canonicalValue(v any, plain bool) any {
	switch v := v.(type) {
	case *orderedObject:
		return canonicalObject(v, false, plain)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			// Objects in lists are data, not settings: nothing is
			// split, duplicates resolve as everywhere.
			out[i] = canonicalValue(x, true)
		}
		return out
	default:
		return v
	}
}

// sortedForCanon orders the distinct keys of one object for applying:
// fewest dots first, then by key, so the result never depends on the
// order of a Go map or of the file.
func sortedForCanon(keys []string) []string {
	out := slices.Clone(keys)
	slices.SortStableFunc(out, func(a, b string) int {
		if da, db := strings.Count(a, "."), strings.Count(b, "."); da != db {
			return da - db
		}
		return strings.Compare(a, b)
	})
	return out
}

// insertCanonical sets v at path in dst: missing or non-object steps
// become objects; at the end an object merges into an object (v winning at
// the leaves) and anything else replaces.
func insertCanonical(dst map[string]any, path []string, v any) {
	for _, seg := range path[:len(path)-1] {
		next, ok := dst[seg].(map[string]any)
		if !ok {
			next = map[string]any{}
			dst[seg] = next
		}
		dst = next
	}
	last := path[len(path)-1]
	if old, ok := dst[last].(map[string]any); ok {
		if nv, ok := v.(map[string]any); ok {
			mergeCanonical(old, nv)
			return
		}
	}
	dst[last] = v
}

// mergeCanonical merges the canonical object src into dst, src winning at
// the leaves and objects merging.
func mergeCanonical(dst, src map[string]any) {
	for _, k := range sortedForCanon(mapKeys(src)) {
		insertCanonical(dst, []string{k}, src[k])
	}
}

func mapKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// canonicalMap turns a decoded JSON object (an editor's settings, where
// duplicates are already gone) into the canonical tree, by the same rules
// as a file.
func canonicalMap(m map[string]any) map[string]any {
	return canonicalObject(orderedFromAny(m).(*orderedObject), true, false)
}

// orderedFromAny wraps decoded JSON objects as orderedObjects, keys in a
// fixed order.
func orderedFromAny(v any) any {
	switch v := v.(type) {
	case map[string]any:
		keys := mapKeys(v)
		slices.Sort(keys)
		obj := &orderedObject{keys: keys, vals: make([]any, len(keys))}
		for i, k := range keys {
			obj.vals[i] = orderedFromAny(v[k])
		}
		return obj
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = orderedFromAny(x)
		}
		return out
	default:
		return v
	}
}

// lookupCanonical returns the value at the dotted key in a canonical tree.
// Below an opaque point (mcpServers) the rest of the key is looked up with
// the longest matching name first, as server names may hold dots.
func lookupCanonical(m map[string]any, key string) (any, bool) {
	path := settingsKeyPath(true, key)
	var cur any = m
	for i, seg := range path {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if i == 1 && opaquePoints[path[0]] {
			// settingsKeyPath left the rest as one name.
			return lookupDotted(obj, seg)
		}
		if cur, ok = obj[seg]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// lookupDotted finds key in m trying, at each level, the longest matching
// key first (names such as MCP server aliases may contain dots).
func lookupDotted(m map[string]any, key string) (any, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	for i := len(key) - 1; i > 0; i-- {
		if key[i] != '.' {
			continue
		}
		sub, ok := m[key[:i]].(map[string]any)
		if !ok {
			continue
		}
		if v, ok := lookupDotted(sub, key[i+1:]); ok {
			return v, true
		}
	}
	return nil, false
}
