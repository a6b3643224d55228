package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

var (
	configType   = reflect.TypeFor[Config]()
	durationType = reflect.TypeFor[time.Duration]()
)

// checker compares one layer's values with the Config struct by reflection.
// It names every problem with the full key and the layer's source, and turns
// accepted values into the exact Go types of their fields, so the final
// mapstructure decode never has to guess.
type checker struct {
	source string // "config file PATH" or "environment variable NAME"
	table  string // what a nested object is called in this source
	errs   []error
}

func (c *checker) fail(format string, args ...any) {
	c.errs = append(c.errs, errors.New(c.source+": "+fmt.Sprintf(format, args...)))
}

func (c *checker) typeErr(key, want string, v any, secret bool) {
	c.fail("key %q: expected %s, got %s", key, want, describe(v, c.table, secret))
}

// fieldByKey finds the struct field whose koanf tag is key.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); f.Tag.Get("koanf") == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func isSecret(f reflect.StructField) bool { return f.Tag.Get("secret") == "true" }

func joinKey(parent, child string) string {
	if parent == "" {
		return child
	}
	return parent + "." + child
}

// mapKey checks a key of a map-typed field. The only map in Config is
// outbox.by_kind, whose keys are outbox kinds.
func (c *checker) mapKey(kind string) bool {
	if slices.Contains(OutboxKinds, kind) {
		return true
	}
	c.fail("unknown outbox kind %q (known: %s)", kind, strings.Join(OutboxKinds, ", "))
	return false
}

// resolve maps a key path to its field type, reporting unknown sections, keys
// and outbox kinds.
func (c *checker) resolve(segs []string) (reflect.Type, bool, bool) {
	t, secret := configType, false
	for i, s := range segs {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldByKey(t, s)
			if !ok {
				if i == 0 {
					c.fail("unknown section %q", s)
				} else {
					c.fail("unknown key %q", strings.Join(segs[:i+1], "."))
				}
				return nil, false, false
			}
			t, secret = f.Type, isSecret(f)
		case reflect.Map:
			if !c.mapKey(s) {
				return nil, false, false
			}
			t = t.Elem()
		default:
			c.fail("unknown key %q", strings.Join(segs[:i+1], "."))
			return nil, false, false
		}
	}
	return t, secret, true
}

// value checks a typed value (from TOML or JSON) for the field type t at key.
// Strings are never converted here: a TOML integer written as "5" is an error.
func (c *checker) value(key string, v any, t reflect.Type, secret bool) (any, bool) {
	if t == durationType {
		s, ok := v.(string)
		if !ok {
			c.typeErr(key, `a duration such as "30s"`, v, secret)
			return nil, false
		}
		return c.duration(key, s, secret)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return c.value(key, v, t.Elem(), secret)
	case reflect.Struct, reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			c.typeErr(key, withArticle(c.table), v, secret)
			return nil, false
		}
		return c.object(key, m, t), true
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			c.typeErr(key, withArticle(typeName(t)), v, secret)
			return nil, false
		}
		out := reflect.MakeSlice(t, 0, len(arr))
		good := true
		for i, e := range arr {
			nv, ok := c.value(fmt.Sprintf("%s[%d]", key, i), e, t.Elem(), secret)
			if ok {
				out = reflect.Append(out, reflect.ValueOf(nv))
			}
			good = good && ok
		}
		return out.Interface(), good
	case reflect.String:
		if s, ok := v.(string); ok {
			return s, true
		}
	case reflect.Bool:
		if b, ok := v.(bool); ok {
			return b, true
		}
	case reflect.Int, reflect.Int64:
		if n, ok := toInt64(v); ok {
			return c.integer(key, n, t)
		}
	case reflect.Float64:
		if f, ok := toFloat64(v); ok {
			return f, true
		}
	}
	c.typeErr(key, withArticle(typeName(t)), v, secret)
	return nil, false
}

// object checks a table against a struct or map type. Keys are visited in
// sorted order so that error lists are stable.
func (c *checker) object(key string, m map[string]any, t reflect.Type) map[string]any {
	out := make(map[string]any, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		child := joinKey(key, k)
		var (
			ft     reflect.Type
			secret bool
		)
		if t.Kind() == reflect.Map {
			if !c.mapKey(k) {
				continue
			}
			ft = t.Elem()
		} else {
			f, ok := fieldByKey(t, k)
			if !ok {
				if key == "" {
					c.fail("unknown section %q", k)
				} else {
					c.fail("unknown key %q", child)
				}
				continue
			}
			ft, secret = f.Type, isSecret(f)
		}
		if nv, ok := c.value(child, m[k], ft, secret); ok {
			out[k] = nv
		}
	}
	return out
}

// fromString converts an environment variable's text to the field type t:
// JSON for objects, a JSON array or comma-separated list for lists, and the
// plain text for scalars.
func (c *checker) fromString(key, s string, t reflect.Type, secret bool) (any, bool) {
	if t == durationType {
		return c.duration(key, strings.TrimSpace(s), secret)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return c.fromString(key, s, t.Elem(), secret)
	case reflect.Struct, reflect.Map:
		v, err := decodeJSON(s)
		if err != nil {
			c.fail("key %q: invalid JSON object: %v", key, err)
			return nil, false
		}
		return c.value(key, v, t, secret)
	case reflect.Slice:
		trimmed := strings.TrimSpace(s)
		if strings.HasPrefix(trimmed, "[") {
			v, err := decodeJSON(trimmed)
			if err != nil {
				c.fail("key %q: invalid JSON array: %v", key, err)
				return nil, false
			}
			return c.value(key, v, t, secret)
		}
		out := reflect.MakeSlice(t, 0, 0)
		if trimmed == "" {
			return out.Interface(), true
		}
		good := true
		for i, part := range strings.Split(trimmed, ",") {
			nv, ok := c.fromString(fmt.Sprintf("%s[%d]", key, i), strings.TrimSpace(part), t.Elem(), secret)
			if ok {
				out = reflect.Append(out, reflect.ValueOf(nv))
			}
			good = good && ok
		}
		return out.Interface(), good
	case reflect.String:
		return s, true
	case reflect.Bool:
		if b, err := strconv.ParseBool(strings.TrimSpace(s)); err == nil {
			return b, true
		}
	case reflect.Int, reflect.Int64:
		if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
			return c.integer(key, n, t)
		}
	case reflect.Float64:
		if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			return f, true
		}
	}
	c.typeErr(key, withArticle(typeName(t)), s, secret)
	return nil, false
}

func (c *checker) duration(key, s string, secret bool) (any, bool) {
	d, err := time.ParseDuration(s)
	if err != nil {
		c.typeErr(key, `a duration such as "30s"`, s, secret)
		return nil, false
	}
	return d, true
}

func (c *checker) integer(key string, n int64, t reflect.Type) (any, bool) {
	v := reflect.New(t).Elem()
	if v.OverflowInt(n) {
		c.fail("key %q: %d is out of range", key, n)
		return nil, false
	}
	v.SetInt(n)
	return v.Interface(), true
}

func toInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// toFloat64 accepts a number, integers included (TOML's 1 for 1.0).
func toFloat64(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// decodeJSON decodes exactly one JSON value, keeping numbers exact.
func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

// typeName is the type of a field as docs/configuration.md and errors name it.
func typeName(t reflect.Type) string {
	if t == durationType {
		return "duration"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Slice:
		return "list of " + typeName(t.Elem()) + "s"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return t.String()
}

// withArticle prefixes a type name with "a" or "an".
func withArticle(name string) string {
	if strings.ContainsAny(name[:1], "aeiou") {
		return "an " + name
	}
	return "a " + name
}

// describe names a rejected value's type and, unless the key holds a secret,
// the value itself.
func describe(v any, table string, secret bool) string {
	var kind string
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return table
	case []any:
		return "array"
	case string:
		kind = "string"
	case bool:
		kind = "boolean"
	case int, int64:
		kind = "integer"
	case float64, json.Number:
		kind = "number"
	case time.Time, toml.LocalDate, toml.LocalDateTime, toml.LocalTime:
		kind = "datetime"
	default:
		kind = fmt.Sprintf("%T", v)
	}
	if secret {
		return kind
	}
	text := fmt.Sprint(v)
	if len(text) > 64 {
		text = text[:61] + "..."
	}
	if _, ok := v.(string); ok {
		text = strconv.Quote(text)
	}
	return kind + " " + text
}
