package console

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Forms generated from the JSON Schemas of provider types: a provider's
// config and credential, a model's settings on its API, an environment
// template's config. Each top-level member of the schema is one input named
// "<prefix>.<member>" ("config.base_url"), which is also the field a
// service's refusal names, so a refused member is shown beside its input.

// schemaInput is one input of a generated form.
type schemaInput struct {
	// Name is the input's form field, such as "config.base_url".
	Name string
	// Label is the schema member's name.
	Label string
	// Control is how the member is typed in: text, url, secret,
	// secret-multiline, integer, number, boolean, select, json.
	Control  string
	Required bool
	// Hint is the schema's description.
	Hint string
	// Default is the schema's default, as text ("" for none).
	Default string
	// Options are an enum's values.
	Options []string
	// Min and Max bound numbers; MaxLength bounds text.
	Min, Max  string
	MaxLength int
	// Value is what the input holds: the stored value or what was typed.
	// Never set for a secret.
	Value string
	// Error is the refusal of the member, or "".
	Error string
	// Stored marks a secret that has a stored value: left blank, it is kept.
	Stored bool
}

// Secret reports whether the input takes a write-only value.
func (in schemaInput) Secret() bool { return strings.HasPrefix(in.Control, "secret") }

// schemaForm is the inputs of one schema, in order: required members
// first, then by name.
type schemaForm struct {
	Prefix string
	Inputs []schemaInput
	// Error is a refusal that names the whole object ("credential"), or "".
	Error string
}

// schemaProps returns a schema document's top-level members and its
// required names.
func schemaProps(doc map[string]any) (map[string]map[string]any, map[string]bool) {
	props := map[string]map[string]any{}
	raw, _ := doc["properties"].(map[string]any)
	for name, p := range raw {
		if m, ok := p.(map[string]any); ok {
			props[name] = m
		}
	}
	required := map[string]bool{}
	if rs, ok := doc["required"].([]any); ok {
		for _, r := range rs {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	return props, required
}

// buildSchemaForm lays out the inputs of doc under prefix, filled from v's
// form values and refusals. Secrets are never filled in: stored says
// whether one is stored (the input then says a blank keeps it).
func buildSchemaForm(doc map[string]any, prefix string, v view, stored bool) schemaForm {
	props, required := schemaProps(doc)
	names := slices.Sorted(maps.Keys(props))
	slices.SortStableFunc(names, func(a, b string) int {
		switch {
		case required[a] == required[b]:
			return 0
		case required[a]:
			return -1
		}
		return 1
	})
	f := schemaForm{Prefix: prefix, Error: v.Fields[prefix]}
	for _, name := range names {
		p := props[name]
		in := schemaInput{Name: prefix + "." + name, Label: name, Required: required[name], Error: v.Fields[prefix+"."+name]}
		in.Hint, _ = p["description"].(string)
		if d, ok := p["default"]; ok {
			in.Default = textOf(d)
		}
		typ, _ := p["type"].(string)
		switch {
		case p["writeOnly"] == true:
			in.Control, in.Stored = "secret", stored
			// A certificate or private key spans lines, which a password
			// input would drop.
			if strings.Contains(in.Hint, "PEM") {
				in.Control = "secret-multiline"
			}
		case p["enum"] != nil:
			in.Control = "select"
			for _, o := range p["enum"].([]any) {
				in.Options = append(in.Options, textOf(o))
			}
		case typ == "integer" || typ == "number":
			in.Control = typ
			if m, ok := p["minimum"]; ok {
				in.Min = textOf(m)
			}
			if m, ok := p["maximum"]; ok {
				in.Max = textOf(m)
			}
		case typ == "boolean":
			in.Control = "boolean"
		case typ == "string" && p["format"] == "uri":
			in.Control = "url"
		case typ == "string":
			in.Control = "text"
		default: // arrays and objects
			in.Control = "json"
		}
		if n, ok := p["maxLength"].(float64); ok {
			in.MaxLength = int(n)
		}
		if !in.Secret() {
			in.Value = v.Form[in.Name]
		}
		f.Inputs = append(f.Inputs, in)
	}
	return f
}

// textOf writes a JSON value as an input holds it: strings as they are,
// anything else as JSON.
func textOf(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// schemaValues writes the non-secret members of a stored object into form
// values under prefix, to fill an edit form.
func schemaValues(doc map[string]any, prefix string, obj map[string]any, into map[string]string) {
	props, _ := schemaProps(doc)
	for name, val := range obj {
		if p, ok := props[name]; ok && p["writeOnly"] == true {
			continue
		}
		into[prefix+"."+name] = textOf(val)
	}
}

// keepSchemaValues copies what was typed into the non-secret inputs of
// doc, to show the form again after a refusal. Secrets are not copied:
// they are typed again.
func keepSchemaValues(doc map[string]any, prefix string, form url.Values, into map[string]string) {
	props, _ := schemaProps(doc)
	for name, p := range props {
		if p["writeOnly"] == true {
			continue
		}
		if s := form.Get(prefix + "." + name); s != "" {
			into[prefix+"."+name] = s
		}
	}
}

// readSchemaForm reads the inputs of doc under prefix back into a JSON
// object: a blank input leaves its member out. Text that is not what the
// member's type needs is refused into fields, by input name. It reports
// whether any member was given.
func readSchemaForm(doc map[string]any, prefix string, form url.Values, fields map[string]string) (map[string]any, bool) {
	props, _ := schemaProps(doc)
	out := map[string]any{}
	for name, p := range props {
		key := prefix + "." + name
		raw := form.Get(key)
		if p["writeOnly"] != true {
			raw = strings.TrimSpace(raw)
		}
		if strings.TrimSpace(raw) == "" {
			continue
		}
		typ, _ := p["type"].(string)
		switch {
		case p["enum"] != nil || typ == "string":
			out[name] = raw
		case typ == "integer":
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				fields[key] = "must be a whole number"
				continue
			}
			out[name] = n
		case typ == "number":
			n, err := strconv.ParseFloat(raw, 64)
			if err != nil {
				fields[key] = "must be a number"
				continue
			}
			out[name] = n
		case typ == "boolean":
			switch raw {
			case "true":
				out[name] = true
			case "false":
				out[name] = false
			default:
				fields[key] = "must be yes or no"
			}
		default:
			var val any
			if err := json.Unmarshal([]byte(raw), &val); err != nil {
				fields[key] = "must be JSON"
				continue
			}
			out[name] = val
		}
	}
	return out, len(out) > 0
}
