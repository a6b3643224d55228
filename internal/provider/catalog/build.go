package catalog

// The helpers below keep the vendor files short and uniform: every object
// schema they build is closed (additionalProperties false), every secret is
// writeOnly, and every URL must be absolute http(s).

// props are the members of an object schema.
type props = map[string]any

// object builds a top-level schema: a closed object with the given members.
func object(p props, required ...string) *Schema {
	return &Schema{doc: closed(p, required...)}
}

// empty is the schema of a config or credential that takes no members.
func empty() *Schema { return object(props{}) }

// closed builds a closed object schema for nesting.
func closed(p props, required ...string) map[string]any {
	s := map[string]any{"type": "object", "additionalProperties": false, "properties": p}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// str is a non-empty string of at most 1024 characters.
func str(desc string) map[string]any {
	return map[string]any{"type": "string", "minLength": 1, "maxLength": 1024, "description": desc}
}

// pattern is a string matching re.
func pattern(desc, re string) map[string]any {
	s := str(desc)
	s["pattern"] = re
	return s
}

// withDefault sets the value used when the member is left out.
func withDefault(s map[string]any, v any) map[string]any {
	s["default"] = v
	return s
}

// url is an absolute http or https URL; def, when not empty, is the default.
// Whether plain http or a private host is allowed is the endpoint policy's
// decision, not the schema's.
func url(desc, def string) map[string]any {
	s := map[string]any{"type": "string", "format": "uri", "pattern": "^https?://", "maxLength": 2048, "description": desc}
	if def != "" {
		s["default"] = def
	}
	return s
}

// secret is a write-only string: an API key, token or private key.
func secret(desc string) map[string]any {
	return map[string]any{"type": "string", "minLength": 1, "maxLength": 65536, "writeOnly": true, "description": desc}
}

// apiKey is the credential of the many vendors that take a single API key.
func apiKey(desc string) *Schema {
	return object(props{"api_key": secret(desc)}, "api_key")
}

// integer is an integer in [lo, hi].
func integer(desc string, lo, hi int) map[string]any {
	return map[string]any{"type": "integer", "minimum": lo, "maximum": hi, "description": desc}
}

// number is a number in [lo, hi].
func number(desc string, lo, hi float64) map[string]any {
	return map[string]any{"type": "number", "minimum": lo, "maximum": hi, "description": desc}
}

// boolean is true or false.
func boolean(desc string) map[string]any {
	return map[string]any{"type": "boolean", "description": desc}
}

// enum is one of the given strings.
func enum(desc string, vals ...string) map[string]any {
	return map[string]any{"type": "string", "enum": vals, "description": desc}
}

// strList is an array of at most maxItems non-empty strings.
func strList(desc string, maxItems int) map[string]any {
	return map[string]any{
		"type": "array", "maxItems": maxItems, "description": desc,
		"items": map[string]any{"type": "string", "minLength": 1, "maxLength": 1024},
	}
}

// withWriteOnly marks a member write-only: a secret never shown back.
func withWriteOnly(s map[string]any) map[string]any {
	s["writeOnly"] = true
	return s
}
