package keyring

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestGenerateLoadRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, Generate(path))

	r, err := Load(path)
	require.NoError(t, err)
	require.True(t, validID(r.PrimaryID()), r.PrimaryID())

	rf := readRing(t, path)
	require.Equal(t, 1, rf.Version)
	require.Len(t, rf.Keys, 1)
	require.Equal(t, r.PrimaryID(), rf.Keys[0].ID)
	require.True(t, rf.Keys[0].Primary)
	_, err = time.Parse(time.RFC3339, rf.Keys[0].CreatedAt)
	require.NoError(t, err)
	secret, err := base64.StdEncoding.DecodeString(rf.Keys[0].Secret)
	require.NoError(t, err)
	require.Len(t, secret, 32)
}

func TestGenerateMakesDistinctKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	require.NoError(t, Generate(a))
	require.NoError(t, Generate(b))
	ka, kb := readRing(t, a).Keys[0], readRing(t, b).Keys[0]
	require.NotEqual(t, ka.ID, kb.ID)
	require.NotEqual(t, ka.Secret, kb.Secret)
}

func TestGenerateFileMode(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, Generate(path))
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), info.Mode().Perm())
}

func TestGenerateRefusesOverwrite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, Generate(path))
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	err = Generate(path)
	require.ErrorIs(t, err, fs.ErrExist)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, "refusing to overwrite")

	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before, after, "existing ring must be untouched")
}

func TestGenerateRefusesDanglingSymlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target.json"), filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(target, link))
	require.ErrorIs(t, Generate(link), fs.ErrExist)
	_, err := os.Lstat(target)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	r := newRing(t)
	for _, pt := range [][]byte{nil, {}, []byte("sk-live-123"), bytes.Repeat([]byte{0xAB}, 1<<16)} {
		sealed, err := r.Seal(pt, []byte("prv_1"))
		require.NoError(t, err)
		id, err := SealedKeyID(sealed)
		require.NoError(t, err)
		require.Equal(t, r.PrimaryID(), id)

		got, err := r.Open(sealed, []byte("prv_1"))
		require.NoError(t, err)
		require.Equal(t, len(pt), len(got))
		require.True(t, bytes.Equal(pt, got))
	}
}

func TestSealUsesFreshNonce(t *testing.T) {
	t.Parallel()
	r := newRing(t)
	a, err := r.Seal([]byte("same"), nil)
	require.NoError(t, err)
	b, err := r.Seal([]byte("same"), nil)
	require.NoError(t, err)
	require.NotEqual(t, a, b)
}

func TestSealedFormat(t *testing.T) {
	t.Parallel()
	r := newRing(t)
	pt := []byte("hello")
	sealed, err := r.Seal(pt, nil)
	require.NoError(t, err)
	id := r.PrimaryID()
	require.Equal(t, byte(1), sealed[0])
	require.Equal(t, byte(len(id)), sealed[1])
	require.Equal(t, id, string(sealed[2:2+len(id)]))
	require.Len(t, sealed, 2+len(id)+12+len(pt)+16)
}

func TestRotation(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, Generate(path))
	old, err := Load(path)
	require.NoError(t, err)
	oldSealed, err := old.Seal([]byte("before rotation"), []byte("prv_1"))
	require.NoError(t, err)

	// Phase 1: add the new key, not yet primary. Sealing does not switch.
	rf := readRing(t, path)
	nk, err := newKey(time.Now().Add(time.Millisecond))
	require.NoError(t, err)
	nk.Primary = false
	rf.Keys = append(rf.Keys, nk)
	writeRing(t, path, rf)
	r, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, old.PrimaryID(), r.PrimaryID())

	// Phase 2: flip the primary.
	rf.Keys[0].Primary, rf.Keys[1].Primary = false, true
	writeRing(t, path, rf)
	r, err = Load(path)
	require.NoError(t, err)
	require.Equal(t, nk.ID, r.PrimaryID())

	got, err := r.Open(oldSealed, []byte("prv_1"))
	require.NoError(t, err, "old ciphertexts must still open")
	require.Equal(t, "before rotation", string(got))

	newSealed, err := r.Seal([]byte("after rotation"), []byte("prv_1"))
	require.NoError(t, err)
	id, err := SealedKeyID(newSealed)
	require.NoError(t, err)
	require.Equal(t, nk.ID, id)

	// The pre-rotation ring does not know the new key.
	_, err = old.Open(newSealed, []byte("prv_1"))
	require.ErrorIs(t, err, ErrUnknownKey)
}

func TestOpenUnknownKey(t *testing.T) {
	t.Parallel()
	sealed, err := newRing(t).Seal([]byte("secret"), nil)
	require.NoError(t, err)
	other := newRing(t)

	got, err := other.Open(sealed, nil)
	require.ErrorIs(t, err, ErrUnknownKey)
	require.NotErrorIs(t, err, ErrDecrypt)
	id, _ := SealedKeyID(sealed)
	require.ErrorContains(t, err, id)
	require.Nil(t, got)
}

func TestOpenTamperedOrWrongContext(t *testing.T) {
	t.Parallel()
	r := newRing(t)
	aad := []byte("prv_1")
	sealed, err := r.Seal([]byte("sk-live-123"), aad)
	require.NoError(t, err)

	_, err = r.Open(sealed, []byte("prv_2"))
	require.ErrorIs(t, err, ErrDecrypt)
	_, err = r.Open(sealed, nil)
	require.ErrorIs(t, err, ErrDecrypt)

	hdr := 2 + len(r.PrimaryID())
	for i := range sealed {
		for _, mask := range []byte{0x01, 0x80} {
			bad := bytes.Clone(sealed)
			bad[i] ^= mask
			got, err := r.Open(bad, aad)
			require.Error(t, err, "byte %d flipped", i)
			require.Nil(t, got)
			if i >= hdr {
				require.ErrorIs(t, err, ErrDecrypt, "byte %d flipped", i)
			} else {
				// A changed header reads as another (unknown) key or as malformed.
				require.True(t, errors.Is(err, ErrDecrypt) || errors.Is(err, ErrUnknownKey), "byte %d: %v", i, err)
			}
		}
	}
	for n := range sealed {
		_, err := r.Open(sealed[:n], aad)
		require.ErrorIs(t, err, ErrDecrypt, "truncated to %d", n)
	}
	_, err = r.Open(append(bytes.Clone(sealed), 0), aad)
	require.ErrorIs(t, err, ErrDecrypt)
}

func TestOpenRejectsOtherRingWithSameKeyID(t *testing.T) {
	t.Parallel()
	// Two rings that reuse an id with different secrets must not open each
	// other's values: authentication fails instead of returning garbage.
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	require.NoError(t, Generate(a))
	rf := readRing(t, a)
	rf.Keys[0].Secret = base64.StdEncoding.EncodeToString(randBytes(t, 32))
	b := filepath.Join(dir, "b.json")
	writeRing(t, b, rf)

	ra, err := Load(a)
	require.NoError(t, err)
	rb, err := Load(b)
	require.NoError(t, err)
	sealed, err := ra.Seal([]byte("x"), nil)
	require.NoError(t, err)
	_, err = rb.Open(sealed, nil)
	require.ErrorIs(t, err, ErrDecrypt)
}

func TestLoadRejectsMalformed(t *testing.T) {
	t.Parallel()
	k1, k2 := validKey(t, true), validKey(t, false)
	short := validKey(t, true)
	short.Secret = base64.StdEncoding.EncodeToString(randBytes(t, 16))
	tests := []struct {
		name, content, want string
	}{
		{"bad json", `{"version":1,"keys":[`, "malformed JSON"},
		{"empty file", ``, "file is empty"},
		{"trailing data", mustJSON(t, ringFile{Version: 1, Keys: []fileKey{k1}}) + "{}", "trailing data"},
		{"duplicate json member", `{"version":1,"version":1,"keys":[]}`, `duplicate key "version"`},
		{"unknown field", `{"version":1,"keys":[],"extra":true}`, `unknown field "extra"`},
		{"wrong version", mustJSON(t, ringFile{Version: 2, Keys: []fileKey{k1}}), "unsupported version 2"},
		{"no keys", mustJSON(t, ringFile{Version: 1}), "no keys"},
		{"empty keys", `{"version":1,"keys":[]}`, "no keys"},
		{"no primary", mustJSON(t, ringFile{Version: 1, Keys: []fileKey{k2}}), "no primary key"},
		{"two primaries", mustJSON(t, ringFile{Version: 1, Keys: []fileKey{k1, withID(t, k1)}}), "more than one primary key"},
		{"short key", mustJSON(t, ringFile{Version: 1, Keys: []fileKey{short}}), "secret is 16 bytes, want 32"},
		{"bad base64", mustJSON(t, ringFile{Version: 1, Keys: []fileKey{withSecret(k1, "not base64!")}}), "not valid standard base64"},
		{"duplicate id", mustJSON(t, ringFile{Version: 1, Keys: []fileKey{k1, k2, {ID: k1.ID, Secret: k2.Secret}}}), "appears more than once"},
		{"missing id", mustJSON(t, ringFile{Version: 1, Keys: []fileKey{{Primary: true, Secret: k1.Secret}}}), "key #1: missing id"},
		{"bad id prefix", mustJSON(t, ringFile{Version: 1, Keys: []fileKey{withIDString(k1, "x_"+k1.ID[2:])}}), "is not k_ followed by"},
		{"uppercase id", mustJSON(t, ringFile{Version: 1, Keys: []fileKey{withIDString(k1, "k_"+strings.ToUpper(k1.ID[2:]))}}), "is not k_ followed by"},
		{"id with u", mustJSON(t, ringFile{Version: 1, Keys: []fileKey{withIDString(k1, k1.ID[:27]+"u")}}), "is not k_ followed by"},
		{"id overflow", mustJSON(t, ringFile{Version: 1, Keys: []fileKey{withIDString(k1, "k_8"+k1.ID[3:])}}), "is not k_ followed by"},
		{"bad created_at", mustJSON(t, ringFile{Version: 1, Keys: []fileKey{withCreated(k1, "yesterday")}}), "created_at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "ring.json")
			require.NoError(t, os.WriteFile(path, []byte(tt.content), 0o600))
			r, err := Load(path)
			require.Nil(t, r)
			require.ErrorContains(t, err, path)
			require.ErrorContains(t, err, tt.want)
			// No secret material may leak into errors.
			require.NotContains(t, err.Error(), k1.Secret)
			require.NotContains(t, err.Error(), k2.Secret)
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "absent.json")
	_, err := Load(path)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, path)
}

func TestLoadAcceptsMissingCreatedAt(t *testing.T) {
	t.Parallel()
	k := withCreated(validKey(t, true), "")
	path := filepath.Join(t.TempDir(), "ring.json")
	writeRing(t, path, ringFile{Version: 1, Keys: []fileKey{k}})
	r, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, k.ID, r.PrimaryID())
}

// Helpers.

func newRing(t *testing.T) *Ring {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, Generate(path))
	r, err := Load(path)
	require.NoError(t, err)
	return r
}

func readRing(t *testing.T, path string) ringFile {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var rf ringFile
	require.NoError(t, json.Unmarshal(data, &rf))
	return rf
}

func writeRing(t *testing.T, path string, rf ringFile) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(mustJSON(t, rf)), 0o600))
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

func validKey(t *testing.T, primary bool) fileKey {
	t.Helper()
	k, err := newKey(time.Now())
	require.NoError(t, err)
	k.Primary = primary
	return k
}

// withID returns a copy of k under a fresh id.
func withID(t *testing.T, k fileKey) fileKey {
	t.Helper()
	fresh := validKey(t, false)
	k.ID = fresh.ID
	return k
}

func withIDString(k fileKey, id string) fileKey { k.ID = id; return k }

func withSecret(k fileKey, s string) fileKey { k.Secret = s; return k }

func withCreated(k fileKey, s string) fileKey { k.CreatedAt = s; return k }

func randBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}
