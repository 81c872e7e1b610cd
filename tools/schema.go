package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// schemaURL is where a tool's schema lives inside its own compiler; nothing
// is ever fetched from it.
const schemaURL = "mem:///tool-arguments.json"

// ArgsSchema is a compiled argument schema. It is immutable and safe for
// concurrent use.
type ArgsSchema struct {
	compiled *jsonschema.Schema
	// order lists the top-level properties in declaration order; it makes
	// the choice of "the first violation" follow what the model was shown.
	order []string
}

// refuseLoader keeps a schema's $ref from reaching the file system or the
// network: a tool schema must be self-contained.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("load %s: external schema references are not supported", url)
}

// compileArgsSchema compiles a tool's JSON Schema. An empty schema compiles
// to nil (nothing to check).
func compileArgsSchema(raw json.RawMessage) (*ArgsSchema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse tool schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("add tool schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("compile tool schema: %w", err)
	}
	return &ArgsSchema{compiled: sch, order: propertyOrder(raw)}, nil
}

// propertyOrder returns the keys of the schema's top-level "properties"
// object in the order they are written.
func propertyOrder(raw json.RawMessage) []string {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil
	}
	props, ok := top["properties"]
	if !ok {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(props))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var order []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return order
		}
		key, _ := t.(string)
		order = append(order, key)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return order
		}
	}
	return order
}

// check validates params and returns the message of the first violation,
// or "" when there is none.
func (s *ArgsSchema) check(params map[string]any) string {
	err := s.compiled.Validate(params)
	if err == nil {
		return ""
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return "params " + err.Error()
	}
	var leaves []*jsonschema.ValidationError
	collectLeaves(verr, &leaves)
	var vs []violation
	for _, l := range leaves {
		if len(l.InstanceLocation) == 0 {
			if _, ok := l.ErrorKind.(*kind.AdditionalProperties); ok {
				// Unknown top-level properties are ignored (tools.md §2.1).
				continue
			}
		}
		vs = append(vs, s.violationOf(l))
	}
	if len(vs) == 0 {
		return ""
	}
	slices.SortStableFunc(vs, compareViolations)
	return vs[0].message
}

// collectLeaves gathers the violations worth reporting. Containers ($ref,
// allOf, the root) are looked through; anyOf, oneOf and not are reported as
// themselves, since no single branch is the one the model meant.
func collectLeaves(e *jsonschema.ValidationError, out *[]*jsonschema.ValidationError) {
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf, *kind.Not:
		*out = append(*out, e)
		return
	}
	if len(e.Causes) == 0 {
		*out = append(*out, e)
		return
	}
	for _, c := range e.Causes {
		collectLeaves(c, out)
	}
}

// violation is one reportable failure and what orders it.
type violation struct {
	rootRequired bool
	prop         int // index of the top-level property in declaration order
	path         []string
	rank         int
	message      string
}

// compareViolations orders violations so that the first is reported:
// missing required properties of the arguments object first (in the order of
// the schema's "required" list), then by top-level property in the order the
// schema declares them (undeclared ones after, by name), then by the path
// below it, then by keyword (type before enum before bounds ...), and last by
// message so that the choice never depends on map iteration.
func compareViolations(a, b violation) int {
	if a.rootRequired != b.rootRequired {
		if a.rootRequired {
			return -1
		}
		return 1
	}
	if a.prop != b.prop {
		return a.prop - b.prop
	}
	if c := comparePaths(a.path, b.path); c != 0 {
		return c
	}
	if a.rank != b.rank {
		return a.rank - b.rank
	}
	return strings.Compare(a.message, b.message)
}

func comparePaths(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		ai, aerr := strconv.Atoi(a[i])
		bi, berr := strconv.Atoi(b[i])
		if aerr == nil && berr == nil {
			return ai - bi
		}
		return strings.Compare(a[i], b[i])
	}
	return len(a) - len(b)
}

func (s *ArgsSchema) violationOf(e *jsonschema.ValidationError) violation {
	v := violation{path: e.InstanceLocation}
	if len(e.InstanceLocation) == 0 {
		v.prop = -1
	} else {
		top := e.InstanceLocation[0]
		v.prop = slices.Index(s.order, top)
		if v.prop < 0 {
			// Undeclared: after the declared ones. The name order among
			// them comes from comparePaths, since the paths differ there.
			v.prop = len(s.order)
		}
	}
	text, rank := describeKind(e.ErrorKind)
	if _, ok := e.ErrorKind.(*kind.Required); ok && len(e.InstanceLocation) == 0 {
		v.rootRequired = true
	}
	v.rank = rank
	v.message = instancePath(e.InstanceLocation) + " " + text
	return v
}

// instancePath renders a location as params/<a>/<b>, escaping as a JSON
// pointer does.
func instancePath(loc []string) string {
	var b strings.Builder
	b.WriteString("params")
	for _, seg := range loc {
		b.WriteByte('/')
		seg = strings.ReplaceAll(seg, "~", "~0")
		b.WriteString(strings.ReplaceAll(seg, "/", "~1"))
	}
	return b.String()
}

// describeKind words one violation as "must …" and ranks its keyword.
func describeKind(k jsonschema.ErrorKind) (string, int) {
	switch k := k.(type) {
	case *kind.Required:
		return fmt.Sprintf("must have required property '%s'", first(k.Missing)), 0
	case *kind.Type:
		return "must be " + strings.Join(k.Want, ","), 1
	case *kind.Enum:
		return "must be equal to one of the allowed values", 2
	case *kind.Const:
		return "must be equal to constant", 3
	case *kind.Minimum:
		return "must be >= " + ratString(k.Want), 4
	case *kind.Maximum:
		return "must be <= " + ratString(k.Want), 5
	case *kind.ExclusiveMinimum:
		return "must be > " + ratString(k.Want), 6
	case *kind.ExclusiveMaximum:
		return "must be < " + ratString(k.Want), 7
	case *kind.MultipleOf:
		return "must be multiple of " + ratString(k.Want), 8
	case *kind.MinLength:
		return fmt.Sprintf("must NOT have fewer than %d characters", k.Want), 9
	case *kind.MaxLength:
		return fmt.Sprintf("must NOT have more than %d characters", k.Want), 10
	case *kind.Pattern:
		return fmt.Sprintf("must match pattern \"%s\"", k.Want), 11
	case *kind.Format:
		return fmt.Sprintf("must match format \"%s\"", k.Want), 12
	case *kind.MinItems:
		return fmt.Sprintf("must NOT have fewer than %d items", k.Want), 13
	case *kind.MaxItems:
		return fmt.Sprintf("must NOT have more than %d items", k.Want), 14
	case *kind.UniqueItems:
		i, j := min(k.Duplicates[0], k.Duplicates[1]), max(k.Duplicates[0], k.Duplicates[1])
		return fmt.Sprintf("must NOT have duplicate items (items %d and %d are identical)", i, j), 15
	case *kind.AdditionalItems:
		return "must NOT have additional items", 16
	case *kind.Contains:
		return "must contain at least 1 valid item(s)", 17
	case *kind.MinContains:
		return fmt.Sprintf("must contain at least %d valid item(s)", k.Want), 17
	case *kind.MaxContains:
		return fmt.Sprintf("must contain at most %d valid item(s)", k.Want), 17
	case *kind.MinProperties:
		return fmt.Sprintf("must NOT have fewer than %d properties", k.Want), 18
	case *kind.MaxProperties:
		return fmt.Sprintf("must NOT have more than %d properties", k.Want), 19
	case *kind.Dependency:
		return fmt.Sprintf("must have property '%s' when property '%s' is present", first(k.Missing), k.Prop), 20
	case *kind.DependentRequired:
		return fmt.Sprintf("must have property '%s' when property '%s' is present", first(k.Missing), k.Prop), 20
	case *kind.AdditionalProperties:
		return fmt.Sprintf("must NOT have additional properties ('%s')", first(k.Properties)), 21
	case *kind.PropertyNames:
		return fmt.Sprintf("must have valid property names ('%s' is not)", k.Property), 22
	case *kind.AnyOf:
		return "must match a schema in anyOf", 23
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			return "must match exactly one schema in oneOf (none matched)", 24
		}
		return "must match exactly one schema in oneOf (more than one matched)", 24
	case *kind.Not:
		return "must NOT be valid against the schema in not", 25
	case *kind.FalseSchema:
		return "must NOT be present (the schema allows nothing here)", 26
	}
	if kw := k.KeywordPath(); len(kw) > 0 {
		return fmt.Sprintf("must satisfy the %q keyword", strings.Join(kw, "/")), 27
	}
	return "must be valid against the schema", 28
}

func first(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return xs[0]
}

// ratString prints a schema bound as the model wrote it would: 5, 0.5, -2.
func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// typeSet is a set of JSON types as the repair pass needs them.
type typeSet struct {
	any                                  bool // unconstrained
	boolean, str, array, object, numeric bool
}

// acceptedTypes returns the JSON types the top-level property name accepts,
// following $ref, allOf and (as a union) anyOf/oneOf. ok is false when the
// schema does not declare the property.
func (s *ArgsSchema) acceptedTypes(name string) (typeSet, bool) {
	p := findProperty(s.compiled, name, 0)
	if p == nil {
		return typeSet{}, false
	}
	return typesOf(p, 0), true
}

// maxSchemaDepth bounds the walk through $ref chains, which may be cyclic.
const maxSchemaDepth = 16

func findProperty(s *jsonschema.Schema, name string, depth int) *jsonschema.Schema {
	if s == nil || depth > maxSchemaDepth {
		return nil
	}
	if p, ok := s.Properties[name]; ok {
		return p
	}
	if p := findProperty(s.Ref, name, depth+1); p != nil {
		return p
	}
	for _, sub := range s.AllOf {
		if p := findProperty(sub, name, depth+1); p != nil {
			return p
		}
	}
	return nil
}

func typesOf(s *jsonschema.Schema, depth int) typeSet {
	if s == nil || depth > maxSchemaDepth {
		return typeSet{any: true}
	}
	if s.Bool != nil {
		return typeSet{any: *s.Bool}
	}
	if s.Types != nil && !s.Types.IsEmpty() {
		var t typeSet
		for _, name := range s.Types.ToStrings() {
			switch name {
			case "boolean":
				t.boolean = true
			case "string":
				t.str = true
			case "array":
				t.array = true
			case "object":
				t.object = true
			case "number", "integer":
				t.numeric = true
			}
		}
		return t
	}
	if s.Ref != nil {
		return typesOf(s.Ref, depth+1)
	}
	alts := append(slices.Clone(s.AnyOf), s.OneOf...)
	if len(alts) == 0 {
		return typeSet{any: true}
	}
	var t typeSet
	for _, alt := range alts {
		u := typesOf(alt, depth+1)
		t = typeSet{
			any:     t.any || u.any,
			boolean: t.boolean || u.boolean,
			str:     t.str || u.str,
			array:   t.array || u.array,
			object:  t.object || u.object,
			numeric: t.numeric || u.numeric,
		}
	}
	return t
}

// repair applies the one repair pass of tools.md §2.1 to the top-level
// properties in place and reports whether it changed anything: string
// booleans (any case) become booleans where the property takes a boolean but
// not a string, and strings holding a JSON array or object are parsed where
// it takes that but not a string.
func (s *ArgsSchema) repair(params map[string]any) bool {
	changed := false
	for name, v := range params {
		str, ok := v.(string)
		if !ok {
			continue
		}
		t, declared := s.acceptedTypes(name)
		if !declared || t.any || t.str {
			continue
		}
		if t.boolean {
			switch {
			case strings.EqualFold(str, "true"):
				params[name], changed = true, true
				continue
			case strings.EqualFold(str, "false"):
				params[name], changed = false, true
				continue
			}
		}
		trimmed := strings.TrimSpace(str)
		if trimmed == "" || (trimmed[0] != '[' && trimmed[0] != '{') {
			continue
		}
		parsed, err := decodeJSON(trimmed)
		if err != nil {
			continue
		}
		switch parsed.(type) {
		case []any:
			if t.array {
				params[name], changed = parsed, true
			}
		case map[string]any:
			if t.object {
				params[name], changed = parsed, true
			}
		}
	}
	return changed
}
