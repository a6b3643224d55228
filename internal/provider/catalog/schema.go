package catalog

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

	"github.com/svcdev/svc/internal/apperr"
)

// draft is the JSON Schema dialect of every provider-type schema; it is stated in
// each document's "$schema" so clients can pick a validator.
const draft = "https://json-schema.org/draft/2020-12/schema"

// Schema is one JSON Schema of a provider type: the document clients read and
// its compiled form that validates input.
type Schema struct {
	doc      map[string]any
	json     json.RawMessage
	compiled *jsonschema.Schema
}

// JSON returns the schema document. The bytes are shared: do not modify them.
func (s *Schema) JSON() json.RawMessage { return s.json }

// Document returns a fresh copy of the schema document, which the caller may
// modify.
func (s *Schema) Document() map[string]any {
	var doc map[string]any
	if err := json.Unmarshal(s.json, &doc); err != nil {
		// s.json was produced by json.Marshal of a map at compile time.
		panic(fmt.Sprintf("provider type schema does not decode: %v", err))
	}
	return doc
}

// Defaults returns the default values the schema declares for its top-level
// members: what a config that leaves a member out means.
func (s *Schema) Defaults() map[string]any {
	out := map[string]any{}
	props, _ := s.doc["properties"].(map[string]any)
	for name, p := range props {
		if m, ok := p.(map[string]any); ok {
			if def, ok := m["default"]; ok {
				out[name] = def
			}
		}
	}
	return out
}

// compiler compiles the schemas of all types with one jsonschema compiler.
type compiler struct{ c *jsonschema.Compiler }

func newCompiler() *compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat() // "format: uri" is checked, not just an annotation
	return &compiler{c: c}
}

// compile fixes the document (adding "$schema"), then compiles it under a
// name unique to the type and part.
func (c *compiler) compile(s *Schema, name string) error {
	if s == nil {
		return fmt.Errorf("provider type schema %s is missing", name)
	}
	if s.compiled != nil {
		return fmt.Errorf("provider type schema %s is shared with another type or part", name)
	}
	s.doc["$schema"] = draft
	raw, err := json.Marshal(s.doc)
	if err != nil {
		return fmt.Errorf("provider type schema %s: %w", name, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("provider type schema %s: %w", name, err)
	}
	url := "mem://provider-types/" + name + ".json"
	if err := c.c.AddResource(url, doc); err != nil {
		return fmt.Errorf("provider type schema %s: %w", name, err)
	}
	if s.compiled, err = c.c.Compile(url); err != nil {
		return fmt.Errorf("provider type schema %s does not compile: %w", name, err)
	}
	s.json = raw
	return nil
}

// validate checks v against the schema. v is any value that encodes to JSON (a
// decoded body, a map, a generated request type); nil counts as the empty
// object. Failures are invalid_argument with one detail per offending field,
// each named by a dotted path under prefix. Reasons never repeat the value, so a
// refused credential cannot leak into a response or a log.
func (s *Schema) validate(v any, prefix string) error {
	if s == nil || s.compiled == nil {
		return errors.New("provider type schema is not compiled")
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return apperr.InvalidField(prefix, "must be a JSON object")
	}
	if string(raw) == "null" { // nil, or a nil map or pointer
		raw = []byte("{}")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return apperr.InvalidField(prefix, "must be a JSON object")
	}
	err = s.compiled.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("validate %s: %w", prefix, err)
	}
	details := fieldDetails(ve, prefix, nil)
	slices.SortFunc(details, func(a, b apperr.Detail) int { return strings.Compare(a.Field, b.Field) })
	details = slices.Compact(details)
	return apperr.InvalidArgument(prefix+" is invalid", details...)
}

// fieldDetails flattens the validation tree into one detail per leaf.
func fieldDetails(e *jsonschema.ValidationError, prefix string, out []apperr.Detail) []apperr.Detail {
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			out = fieldDetails(c, prefix, out)
		}
		return out
	}
	field := strings.Join(append([]string{prefix}, e.InstanceLocation...), ".")
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			out = append(out, apperr.Detail{Field: field + "." + m, Reason: "is required"})
		}
		return out
	case *kind.DependentRequired:
		for _, m := range k.Missing {
			out = append(out, apperr.Detail{Field: field + "." + m, Reason: "is required when " + k.Prop + " is set"})
		}
		return out
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			out = append(out, apperr.Detail{Field: field + "." + p, Reason: "is not a known field"})
		}
		return out
	}
	return append(out, apperr.Detail{Field: field, Reason: reason(e.ErrorKind)})
}

// reason describes one failed keyword without the offending value.
func reason(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return "must be " + article(strings.Join(k.Want, " or "))
	case *kind.Format:
		return "must be a valid " + k.Want
	case *kind.Pattern:
		return "must match the pattern " + k.Want
	case *kind.Enum:
		vals := make([]string, 0, len(k.Want))
		for _, w := range k.Want {
			vals = append(vals, fmt.Sprint(w))
		}
		return "must be one of " + strings.Join(vals, ", ")
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters", k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items", k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d members", k.Want)
	case *kind.Minimum:
		return "must be at least " + num(k.Want)
	case *kind.Maximum:
		return "must be at most " + num(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be greater than " + num(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be less than " + num(k.Want)
	}
	return "is invalid"
}

// num prints a schema bound as it is written: 1, 0.5.
func num(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func article(typ string) string {
	if typ != "" && strings.ContainsRune("aeiou", rune(typ[0])) {
		return "an " + typ
	}
	return "a " + typ
}
