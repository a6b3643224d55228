package session

import (
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/password"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

func TestDummyHashMatchesParameters(t *testing.T) {
	t.Parallel()
	h, err := password.Hash("anything at all")
	require.NoError(t, err)
	params := func(phc string) string { return strings.Join(strings.Split(phc, "$")[:4], "$") }
	require.Equal(t, params(h), params(dummyHash), "the dummy hash must cost what a real one does")
	ok, err := password.Verify("anything at all", dummyHash)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestTokens(t *testing.T) {
	t.Parallel()
	tok, hash, err := newSecret()
	require.NoError(t, err)
	require.True(t, WellFormed(tok))
	require.Equal(t, hashSecret(tok), hash)
	require.Len(t, hash, 32)
	other, _, err := newSecret()
	require.NoError(t, err)
	require.NotEqual(t, tok, other)
	for _, bad := range []string{"", "short", tok + "A", tok[:42] + "!", strings.Repeat("+", 43)} {
		require.False(t, WellFormed(bad), bad)
	}
}

type testBundle struct {
	svc   *Service
	admin testfactory.Admin
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := testdb.New(t)
	key := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, keyring.Generate(key))
	ring, err := keyring.Load(key)
	require.NoError(t, err)
	svc, err := NewService(Options{
		Pool: pool, Keyring: ring, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		PublicURL: "http://localhost:8080", SessionTTL: time.Hour, MailLinkTTL: time.Hour,
		PerAccountPerClientPerMinute: 10, PerAccountPerMinute: 10, PerAddressPerMinute: 10,
	})
	require.NoError(t, err)
	return &testBundle{svc: svc, admin: testfactory.Bootstrap(t, pool)}
}

// TestSignInTiming checks that refusing an unknown address costs an argon2id
// verification, like a wrong password: the answer's timing does not tell
// whether the address has an account.
// TestSignInCostsTheSameWhateverTheAddress checks the work, not the clock: every
// refusal runs exactly one argon2id verification with the parameters of real
// hashes, so neither the answer nor its timing tells whether an address has an
// account. (Wall-clock comparisons flake on a loaded machine.)
func TestSignInCostsTheSameWhateverTheAddress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var params []string
	b.svc.verify = func(pw, hash string) (bool, error) {
		params = append(params, strings.Join(strings.Split(hash, "$")[1:4], "$")) // algorithm, version, cost
		return password.Verify(pw, hash)
	}
	for _, email := range []string{b.admin.Email, "nobody@example.com"} {
		_, err := b.svc.SignIn(t.Context(), SignInInput{Email: email, Password: "not the password"})
		require.ErrorIs(t, err, ErrBadCredentials)
	}
	_, err := b.svc.SignIn(t.Context(), SignInInput{Email: "nobody@example.com", Password: strings.Repeat("x", password.MaxLength+1)})
	require.Error(t, err)
	require.Len(t, params, 3, "one verification per attempt")
	require.Equal(t, params[0], params[1], "an unknown address costs what a wrong password costs")
	require.Equal(t, params[0], params[2], "so does an oversized password")
}

func TestSignInInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.svc.SignIn(t.Context(), SignInInput{Email: " ", Password: ""})
	ae, ok := apperr.As(err)
	require.True(t, ok)
	require.Equal(t, apperr.KindInvalidArgument, ae.Kind)
	require.Len(t, ae.Details, 2)

	created, err := b.svc.SignIn(t.Context(), SignInInput{Email: " Admin@Example.com ", Password: "correct horse battery"})
	require.NoError(t, err)
	s, err := b.svc.Resolve(t.Context(), created.Token)
	require.NoError(t, err)
	require.Equal(t, b.admin.UserID, s.UserID)
	require.Equal(t, b.admin.PrincipalID, s.PrincipalID)
	require.WithinDuration(t, time.Now().Add(time.Hour), s.ExpiresAt, time.Minute)

	_, err = b.svc.Resolve(t.Context(), "garbage")
	require.ErrorIs(t, err, ErrNoSession)
	require.NoError(t, b.svc.SignOut(t.Context(), created.Token))
	_, err = b.svc.Resolve(t.Context(), created.Token)
	require.ErrorIs(t, err, ErrNoSession)
}
