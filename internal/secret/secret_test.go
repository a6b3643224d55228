package secret_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/secret"
)

func ring(t *testing.T) *keyring.Ring {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, keyring.Generate(path))
	r, err := keyring.Load(path)
	require.NoError(t, err)
	return r
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	r := ring(t)
	v := map[string]any{"api_key": "sk-secret"}
	sealed, err := secret.Seal(r, "con_1", v)
	require.NoError(t, err)
	require.False(t, bytes.Contains(sealed, []byte("sk-secret")))

	var out map[string]any
	require.NoError(t, secret.Open(r, "con_1", sealed, &out))
	require.Equal(t, v, out)

	// Bound to its row: another row's id does not open it, and says why
	// without the value.
	err = secret.Open(r, "con_2", sealed, &out)
	require.True(t, errors.Is(err, secret.ErrUnreadable), err)
	require.NotContains(t, err.Error(), "sk-secret")

	// Nothing seals to nothing, and nothing opens to nothing.
	var none map[string]any
	sealed, err = secret.Seal(r, "con_1", none)
	require.NoError(t, err)
	require.Nil(t, sealed)
	out = map[string]any{"kept": true}
	require.NoError(t, secret.Open(r, "con_1", nil, &out))
	require.Equal(t, map[string]any{"kept": true}, out)
}

func TestDiffers(t *testing.T) {
	t.Parallel()
	r := ring(t)
	stored, err := secret.Seal(r, "id", map[string]any{"a": 1, "b": "x"})
	require.NoError(t, err)
	same := map[string]any{"b": "x", "a": 1.0}
	other := map[string]any{"a": 2}
	require.False(t, secret.Differs(r, "id", stored, &same), "key order and number spelling do not count")
	require.True(t, secret.Differs(r, "id", stored, &other))
	require.True(t, secret.Differs[map[string]any](r, "id", stored, nil), "removing a stored value is a change")
	require.False(t, secret.Differs[map[string]any](r, "id", nil, nil), "removing nothing is none")
	require.True(t, secret.Differs(r, "id", nil, &same))
	// A value that cannot be opened counts as changed, so resending repairs it.
	require.True(t, secret.Differs(r, "other-id", stored, &same))

	require.True(t, secret.Remove[int]().Present)
	require.Nil(t, secret.Remove[int]().Value)
	require.Equal(t, 3, *secret.Set(3).Value)
}
