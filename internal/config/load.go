package config

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
	gotoml "github.com/pelletier/go-toml/v2"
)

// envPrefix starts every environment variable Load reads. Every variable with
// this prefix must name a configuration key.
const envPrefix = "SVC_"

// Load resolves the configuration: Default, then the TOML file at path (none
// if path is empty), then the SVC_ variables in environ (as os.Environ
// returns them). It returns the validated result, or every problem found,
// each naming its key and the file or variable it came from.
//
// An environment variable replaces the whole value of its key: a JSON object
// in SVC_OUTBOX__DEFAULTS replaces the file's [outbox.defaults] (fields it
// leaves out fall back to the built-in defaults), and SVC_OUTBOX__BY_KIND
// replaces the file's whole outbox.by_kind. Variables apply shallowest key
// first, so SVC_OUTBOX__DEFAULTS__BATCH refines SVC_OUTBOX__DEFAULTS.
func Load(path string, environ []string) (*Config, error) {
	defaults := koanf.New(".")
	if err := defaults.Load(confmap.Provider(toMap(reflect.ValueOf(Default())), ""), nil); err != nil {
		return nil, fmt.Errorf("load defaults: %w", err)
	}
	k := defaults.Copy()

	var errs []error
	if path != "" {
		m, err := readFile(path)
		if err != nil {
			errs = append(errs, err)
		} else if err := k.Load(confmap.Provider(m, ""), nil); err != nil {
			return nil, fmt.Errorf("config file %s: %w", path, err)
		}
	}

	vars, envErrs := readEnv(environ)
	errs = append(errs, envErrs...)
	for _, v := range vars {
		if v.object {
			// koanf deep-merges maps, so clear the key first: the variable
			// replaces the file's value instead of adding to it.
			k.Delete(v.key)
			if d := defaults.Get(v.key); d != nil {
				if err := k.Load(confmap.Provider(map[string]any{v.key: d}, "."), nil); err != nil {
					return nil, fmt.Errorf("environment variable %s: %w", v.name, err)
				}
			}
		}
		if err := k.Load(confmap.Provider(map[string]any{v.key: v.value}, "."), nil); err != nil {
			return nil, fmt.Errorf("environment variable %s: %w", v.name, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	// Every layer was checked and converted to the field types already, so
	// weak typing stays off: it would let a file's "5" pass for 5.
	var cfg Config
	err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{DecoderConfig: &mapstructure.DecoderConfig{
		TagName:     "koanf",
		ErrorUnused: true,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			mapstructure.StringToTimeDurationHookFunc(),
			mapstructure.StringToSliceHookFunc(","),
		),
	}})
	if err != nil {
		return nil, fmt.Errorf("decode configuration: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	return &cfg, nil
}

// readFile reads and checks the TOML file, returning it with values of their
// field types.
func readFile(path string) (map[string]any, error) {
	src := "config file " + path
	b, err := file.Provider(path).ReadBytes()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	raw, err := toml.Parser().Unmarshal(b)
	if err != nil {
		var de *gotoml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("%s: line %d, column %d: %w", src, row, col, err)
		}
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	c := &checker{source: src, table: "table"}
	m := c.object("", raw, configType)
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	return m, nil
}

// envVar is one checked SVC_ variable.
type envVar struct {
	name   string
	key    string // dotted key
	depth  int
	object bool // the key is a section or object: the value replaces it whole
	value  any
}

// readEnv checks every SVC_ variable and returns them shallowest key first.
func readEnv(environ []string) ([]envVar, []error) {
	byName := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if ok && strings.HasPrefix(name, envPrefix) {
			byName[name] = value // a repeated name: the last one wins
		}
	}

	var (
		vars   []envVar
		errs   []error
		keyVar = map[string]string{}
	)
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		c := &checker{source: "environment variable " + name, table: "JSON object"}
		segs := strings.Split(strings.ToLower(strings.TrimPrefix(name, envPrefix)), "__")
		if slices.Contains(segs, "") {
			c.fail("malformed name: expected SVC_SECTION__KEY with single words between the __ separators")
			errs = append(errs, c.errs...)
			continue
		}
		key := strings.Join(segs, ".")
		if other, dup := keyVar[key]; dup {
			c.fail("sets key %q, which %s also sets", key, other)
			errs = append(errs, c.errs...)
			continue
		}
		keyVar[key] = name

		t, secret, ok := c.resolve(segs)
		if !ok {
			errs = append(errs, c.errs...)
			continue
		}
		v, ok := c.fromString(key, byName[name], t, secret)
		if !ok || len(c.errs) > 0 {
			errs = append(errs, c.errs...)
			continue
		}
		kind := t.Kind()
		vars = append(vars, envVar{
			name: name, key: key, depth: len(segs), value: v,
			object: kind == reflect.Struct || kind == reflect.Map,
		})
	}
	slices.SortStableFunc(vars, func(a, b envVar) int { return cmp.Compare(a.depth, b.depth) })
	return vars, errs
}
