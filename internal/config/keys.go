package config

import (
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Key describes one configuration key for documentation.
type Key struct {
	// Name is the full dotted key, such as "outbox.defaults.batch".
	Name string
	// Type is "string", "integer", "number", "boolean", "duration",
	// "list of strings", "list of integers" or "object".
	Type string
	// Default is the built-in value as TOML would write it: strings and
	// durations in double quotes ("2s"), numbers and booleans bare, lists as
	// TOML arrays ([] when empty) and objects as inline tables ({} when empty).
	Default string
}

// Keys lists every leaf key of Config with its default, in struct order.
// outbox.by_kind is listed as one object key (the operator's overrides, empty
// by default) followed by one integer key per field of each built-in
// override, named outbox.by_kind.<kind>.<field>.
func Keys() []Key {
	var out []Key
	walkLeaves("", reflect.ValueOf(Default()), func(name string, v reflect.Value) {
		out = append(out, Key{Name: name, Type: typeName(v.Type()), Default: render(v)})
		if name != "outbox.by_kind" {
			return
		}
		builtin := builtinOverrides()
		for _, kind := range OutboxKinds {
			ov, ok := builtin[kind]
			if !ok {
				continue
			}
			walkLeaves(name+"."+kind, reflect.ValueOf(ov), func(field string, f reflect.Value) {
				if !f.IsNil() {
					out = append(out, Key{Name: field, Type: typeName(f.Type()), Default: render(f.Elem())})
				}
			})
		}
	})
	return out
}

// walkLeaves calls fn for every non-struct field below v, in field order.
func walkLeaves(prefix string, v reflect.Value, fn func(name string, v reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		name := joinKey(prefix, t.Field(i).Tag.Get("koanf"))
		if f := v.Field(i); f.Kind() == reflect.Struct && f.Type() != durationType {
			walkLeaves(name, f, fn)
		} else {
			fn(name, f)
		}
	}
}

// render writes a value the way docs/configuration.md shows defaults.
func render(v reflect.Value) string {
	if v.Type() == durationType {
		return strconv.Quote(formatDuration(time.Duration(v.Int())))
	}
	switch v.Kind() {
	case reflect.String:
		return strconv.Quote(v.String())
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Float64:
		// Always with a point, as TOML writes a float: 1.0, 0.25.
		f := strconv.FormatFloat(v.Float(), 'f', -1, 64)
		if !strings.Contains(f, ".") {
			f += ".0"
		}
		return f
	case reflect.Pointer:
		if v.IsNil() {
			return ""
		}
		return render(v.Elem())
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = render(v.Index(i))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case reflect.Map:
		// The only map, outbox.by_kind, is empty by default: built-in
		// overrides are listed as keys of their own.
		if v.Len() == 0 {
			return "{}"
		}
	}
	panic("config: cannot render default of type " + v.Type().String())
}

// formatDuration drops the zero tails of time.Duration.String: 2m, not 2m0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// toMap turns a struct into the nested map koanf merges, keyed by koanf tags,
// with leaves of their field types. Nil pointers are left out.
func toMap(v reflect.Value) map[string]any {
	out := map[string]any{}
	t := v.Type()
	for i := range t.NumField() {
		key, f := t.Field(i).Tag.Get("koanf"), v.Field(i)
		switch {
		case f.Kind() == reflect.Pointer:
			if !f.IsNil() {
				out[key] = f.Elem().Interface()
			}
		case f.Kind() == reflect.Struct && f.Type() != durationType:
			out[key] = toMap(f)
		case f.Kind() == reflect.Map:
			m := map[string]any{}
			for _, k := range f.MapKeys() {
				m[k.String()] = toMap(f.MapIndex(k))
			}
			out[key] = m
		default:
			out[key] = f.Interface()
		}
	}
	return out
}
