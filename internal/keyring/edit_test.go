package keyring

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAddKeyKeepsOldKeysAndPrimary(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, Generate(path))
	old, err := Load(path)
	require.NoError(t, err)
	before := readRing(t, path)
	sealed, err := old.Seal([]byte("s3cret"), []byte("aad"))
	require.NoError(t, err)

	id, err := AddKey(path)
	require.NoError(t, err)
	require.True(t, validID(id), id)

	after := readRing(t, path)
	require.Len(t, after.Keys, 2)
	require.Equal(t, before.Keys[0], after.Keys[0], "the old key is kept unchanged")
	require.Equal(t, id, after.Keys[1].ID)
	require.False(t, after.Keys[1].Primary, "a new key is not primary until promoted")

	r, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, old.PrimaryID(), r.PrimaryID())
	plain, err := r.Open(sealed, []byte("aad"))
	require.NoError(t, err)
	require.Equal(t, "s3cret", string(plain))
	// Still sealing under the old primary.
	again, err := r.Seal([]byte("x"), nil)
	require.NoError(t, err)
	kid, err := SealedKeyID(again)
	require.NoError(t, err)
	require.Equal(t, old.PrimaryID(), kid)
}

func TestPromoteFlipsPrimary(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, Generate(path))
	old, err := Load(path)
	require.NoError(t, err)
	sealed, err := old.Seal([]byte("s3cret"), []byte("aad"))
	require.NoError(t, err)
	id, err := AddKey(path)
	require.NoError(t, err)

	require.NoError(t, Promote(path, id))
	r, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, id, r.PrimaryID())
	keys, err := List(path)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.False(t, keys[0].Primary)
	require.True(t, keys[1].Primary)

	plain, err := r.Open(sealed, []byte("aad"))
	require.NoError(t, err, "values sealed under the old key still open")
	require.Equal(t, "s3cret", string(plain))
	fresh, err := r.Seal([]byte("x"), nil)
	require.NoError(t, err)
	kid, err := SealedKeyID(fresh)
	require.NoError(t, err)
	require.Equal(t, id, kid)

	// Promoting the primary again is a no-op; promoting back works.
	require.NoError(t, Promote(path, id))
	require.NoError(t, Promote(path, old.PrimaryID()))
	r, err = Load(path)
	require.NoError(t, err)
	require.Equal(t, old.PrimaryID(), r.PrimaryID())
}

func TestPromoteUnknownKeyChangesNothing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, Generate(path))
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	err = Promote(path, "k_01m82fv7v064zcdnff3tyw30kn")
	require.ErrorIs(t, err, ErrNoSuchKey)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

func TestListShowsNoSecret(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, Generate(path))
	_, err := AddKey(path)
	require.NoError(t, err)
	keys, err := List(path)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	out := mustJSON(t, keys)
	for _, k := range readRing(t, path).Keys {
		require.NotContains(t, out, k.Secret)
	}
	require.NotContains(t, out, "secret")
	require.True(t, keys[0].Primary)
	require.NotEmpty(t, keys[0].CreatedAt)
}

func TestEditWritesAtomicallyWithMode0600(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "keyring.json")
	require.NoError(t, Generate(path))
	// A looser mode on the old file is not preserved.
	require.NoError(t, os.Chmod(path, 0o644))
	id, err := AddKey(path)
	require.NoError(t, err)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), info.Mode().Perm())
	require.NoError(t, os.Chmod(path, 0o640))
	require.NoError(t, Promote(path, id))
	info, err = os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), info.Mode().Perm())

	// No temporary file is left behind.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "keyring.json", entries[0].Name())
}

func TestEditRefusesInvalidRing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "keyring.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"version":1,"keys":[]}`), 0o600))
	_, err := AddKey(path)
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "no keys"), err.Error())
	_, err = AddKey(filepath.Join(dir, "missing.json"))
	require.True(t, errors.Is(err, fs.ErrNotExist), err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, `{"version":1,"keys":[]}`, string(data))
}
