package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/testdb"
)

// decodeOne decodes the single JSON value r printed on stdout into v.
func decodeOne(t *testing.T, r result, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), "%s", r)
	require.False(t, dec.More(), "one JSON value on stdout: %s", r)
}

// addReport is what `svc keyring add` prints.
type addReport struct {
	KeyFile      string `json:"key_file"`
	KeyID        string `json:"key_id"`
	PrimaryKeyID string `json:"primary_key_id"`
}

type keyInfo struct {
	ID        string `json:"id"`
	Primary   bool   `json:"primary"`
	CreatedAt string `json:"created_at"`
}

// TestKeyringRotationCommands: add, promote and list edit and show the ring
// file the way the operations guide describes, and never print a secret.
func TestKeyringRotationCommands(t *testing.T) {
	t.Parallel()
	path := newKeyRing(t)
	ring, err := keyring.Load(path)
	require.NoError(t, err)
	oldID := ring.PrimaryID()

	r := runSvc(t, nil, "keyring", "add", "--file", path)
	require.Equal(t, 0, r.code, "%s", r)
	var added addReport
	decodeOne(t, r, &added)
	require.Equal(t, path, added.KeyFile)
	require.Equal(t, oldID, added.PrimaryKeyID, "add does not change the primary")
	require.NotEqual(t, oldID, added.KeyID)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	// The configured key file is the default.
	r = runSvc(t, map[string]string{"SVC_ENCRYPTION__KEY_FILE": path}, "keyring", "list")
	require.Equal(t, 0, r.code, "%s", r)
	var keys []keyInfo
	decodeOne(t, r, &keys)
	require.Len(t, keys, 2)
	require.Equal(t, keyInfo{ID: oldID, Primary: true, CreatedAt: keys[0].CreatedAt}, keys[0])
	require.Equal(t, keyInfo{ID: added.KeyID, Primary: false, CreatedAt: keys[1].CreatedAt}, keys[1])
	require.NotContains(t, r.stdout, "secret")

	r = runSvc(t, nil, "keyring", "promote", "--file", path, "--key-id", added.KeyID)
	require.Equal(t, 0, r.code, "%s", r)
	var promoted struct {
		KeyFile      string `json:"key_file"`
		PrimaryKeyID string `json:"primary_key_id"`
	}
	decodeOne(t, r, &promoted)
	require.Equal(t, added.KeyID, promoted.PrimaryKeyID)

	r = runSvc(t, nil, "keyring", "list", "--file", path)
	require.Equal(t, 0, r.code, "%s", r)
	keys = nil
	decodeOne(t, r, &keys)
	require.False(t, keys[0].Primary)
	require.True(t, keys[1].Primary)

	// Promoting a key that is not in the ring fails and changes nothing.
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	r = runSvc(t, nil, "keyring", "promote", "--file", path, "--key-id", "k_01m82fv7v064zcdnff3tyw30kn")
	require.Equal(t, 1, r.code, "%s", r)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "no such key")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

func TestKeyringEditUsageAndFailures(t *testing.T) {
	t.Parallel()
	path := newKeyRing(t)
	missing := filepath.Join(t.TempDir(), "missing.json")
	cases := []struct {
		name string
		code int
		args []string
		want string
	}{
		{"add without a file", 2, []string{"keyring", "add"}, "--file"},
		{"list without a file", 2, []string{"keyring", "list"}, "--file"},
		{"promote without --key-id", 2, []string{"keyring", "promote", "--file", path}, "--key-id"},
		{"add extra argument", 2, []string{"keyring", "add", "--file", path, "extra"}, `"extra"`},
		{"reseal bad batch", 2, []string{"keyring", "reseal", "--batch", "0"}, "--batch"},
		{"add to a missing file", 1, []string{"keyring", "add", "--file", missing}, "missing.json"},
		{"list a missing file", 1, []string{"keyring", "list", "--file", missing}, "missing.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runSvcWithin(t, refuseTimeout, nil, tc.args...)
			require.Equal(t, tc.code, r.code, "%s", r)
			require.Empty(t, r.stdout, "%s", r)
			require.Contains(t, r.stderr, tc.want, "%s", r)
		})
	}
	_, err := os.Stat(missing)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing is created")
}

// TestKeyringReseal: after a rotation, reseal moves stored secrets to the new
// primary; a value under a key missing from the ring is reported and exits 1.
func TestKeyringReseal(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	rep, _ := bootstrap(t, url)
	path := newKeyRing(t)
	old, err := keyring.Load(path)
	require.NoError(t, err)
	lost, err := keyring.Load(newKeyRing(t))
	require.NoError(t, err)

	conn := connect(t, url)
	ctx := context.Background()
	insert := func(r *keyring.Ring) string {
		pid := id.New(id.Provider)
		sealed, err := r.Seal([]byte(`{"api_key":"sk"}`), []byte(pid))
		require.NoError(t, err)
		_, err = conn.Exec(ctx, `INSERT INTO provider (id, workspace_id, kind, type, name, credential, created_by_id, updated_by_id)
VALUES ($1, $2, 'web', 'search', $1, $3, $4, $4)`, pid, rep.WorkspaceID, sealed, rep.PrincipalID)
		require.NoError(t, err)
		return pid
	}
	good, gone := insert(old), insert(lost)

	r := runSvc(t, nil, "keyring", "add", "--file", path)
	require.Equal(t, 0, r.code, "%s", r)
	var added addReport
	decodeOne(t, r, &added)
	r = runSvc(t, nil, "keyring", "promote", "--file", path, "--key-id", added.KeyID)
	require.Equal(t, 0, r.code, "%s", r)

	vars := dbVars(url)
	vars["SVC_ENCRYPTION__KEY_FILE"] = path
	type report struct {
		Resealed   map[string]int `json:"resealed"`
		Unreadable int            `json:"unreadable"`
	}
	r = runSvc(t, vars, "keyring", "reseal", "--batch", "1")
	require.Equal(t, 1, r.code, "%s", r)
	var got report
	decodeOne(t, r, &got)
	require.Equal(t, 1, got.Resealed["provider_credential"])
	require.Equal(t, 1, got.Unreadable)
	require.Contains(t, r.stderr, gone)
	require.NotContains(t, r.stderr, good)

	var sealed []byte
	require.NoError(t, conn.QueryRow(ctx, `SELECT credential FROM provider WHERE id = $1`, good).Scan(&sealed))
	kid, err := keyring.SealedKeyID(sealed)
	require.NoError(t, err)
	require.Equal(t, added.KeyID, kid)

	// Again: nothing left to re-seal, the lost value is still reported.
	r = runSvc(t, vars, "keyring", "reseal")
	require.Equal(t, 1, r.code, "%s", r)
	got = report{}
	decodeOne(t, r, &got)
	require.Equal(t, 0, got.Resealed["provider_credential"])
	require.Equal(t, 1, got.Unreadable)

	// A database without this binary's schema is refused.
	empty := dbVars(testdb.Empty(t))
	empty["SVC_ENCRYPTION__KEY_FILE"] = path
	r = runSvc(t, empty, "keyring", "reseal")
	require.Equal(t, 1, r.code, "%s", r)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "svc migrate")
}
