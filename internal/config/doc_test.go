package config

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// docRow matches a key row of docs/configuration.md: | `key` | `default` | meaning |
var docRow = regexp.MustCompile("^\\| `([^`]+)` \\| `([^`]*)` \\| (.*) \\|$")

func TestDocListsEveryKey(t *testing.T) {
	t.Parallel()

	_, here, _, ok := runtime.Caller(0)
	require.True(t, ok)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "docs", "configuration.md"))
	require.NoError(t, err)

	documented := map[string]string{}
	for _, line := range regexp.MustCompile(`\r?\n`).Split(string(b), -1) {
		m := docRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		_, dup := documented[m[1]]
		require.False(t, dup, "key %s is documented twice", m[1])
		require.NotEmpty(t, m[3], "key %s has no meaning", m[1])
		documented[m[1]] = m[2]
	}

	for _, k := range Keys() {
		def, ok := documented[k.Name]
		if !ok {
			t.Errorf("key %s (default %s) is missing from docs/configuration.md", k.Name, k.Default)
			continue
		}
		if def != k.Default {
			t.Errorf("key %s: docs/configuration.md says default %s, code says %s", k.Name, def, k.Default)
		}
		delete(documented, k.Name)
	}
	for name := range documented {
		t.Errorf("docs/configuration.md documents %s, which is not a configuration key", name)
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()

	byName := map[string]Key{}
	for _, k := range Keys() {
		require.NotContains(t, byName, k.Name)
		byName[k.Name] = k
	}
	for _, want := range []Key{
		{Name: "server.listen", Type: "string", Default: `":8080"`},
		{Name: "server.readiness_timeout", Type: "duration", Default: `"2s"`},
		{Name: "server.idle_timeout", Type: "duration", Default: `"2m"`},
		{Name: "database.auto_migrate", Type: "boolean", Default: "true"},
		{Name: "limits.request_bytes", Type: "integer", Default: "1048576"},
		{Name: "endpoint_policy.allowed_prefixes", Type: "list of strings", Default: "[]"},
		{Name: "endpoint_policy.allowed_ports", Type: "list of integers", Default: "[]"},
		{Name: "outbox.defaults.batch", Type: "integer", Default: "32"},
		{Name: "outbox.by_kind", Type: "object", Default: "{}"},
		{Name: "outbox.by_kind.webhook.delivered_retention_seconds", Type: "integer", Default: "604800"},
		{Name: "outbox.by_kind.checkpoint_cleanup.delivered_retention_seconds", Type: "integer", Default: "3600"},
		{Name: "outbox.by_kind.checkpoint_cleanup.parallel", Type: "integer", Default: "2"},
	} {
		require.Equal(t, want, byName[want.Name])
	}
	require.Equal(t, "server.listen", Keys()[0].Name, "keys follow struct order")
}
