package model

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
)

func TestValidateKey(t *testing.T) {
	t.Parallel()
	longest := "a" + strings.Repeat("-", 127)
	for _, key := range []string{"a", "0", longest, "gpt-4.1-mini", "a..b", "x-"} {
		require.NoError(t, ValidateKey(key), key)
	}
	for _, key := range []string{"", longest + "a", "A", "gpT", "-a", ".a", "a_b", "a b", "a/b", "a\x00",
		"gpt-4\u043e", "\u0261pt", "gpt\uff0d4", "caf\u00e9", "a\u200b", "a\n", "\u212a"} {
		err := ValidateKey(key)
		require.Error(t, err, "%q", key)
		ae, ok := apperr.As(err)
		require.True(t, ok)
		require.Equal(t, apperr.KindInvalidArgument, ae.Kind)
		require.Equal(t, "key", ae.Details[0].Field)
	}
}

func TestValidateModelName(t *testing.T) {
	t.Parallel()
	require.NoError(t, validateModelName("claude-sonnet-4-5@20250929"))
	require.NoError(t, validateModelName(strings.Repeat("é", maxModelName)))
	for _, bad := range []string{"", "   ", strings.Repeat("a", maxModelName+1), "a\nb", "a\x00", "\xff"} {
		require.Error(t, validateModelName(bad), "%q", bad)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.UTC)
	c := encodeCursor(Model{Key: "gpt-4.1", CreatedAt: at})
	gotAt, gotKey, err := decodeCursor(&c)
	require.NoError(t, err)
	require.True(t, at.Equal(gotAt))
	require.Equal(t, "gpt-4.1", gotKey)

	first, key, err := decodeCursor(nil)
	require.NoError(t, err)
	require.True(t, first.After(time.Now().AddDate(1000, 0, 0)))
	require.Empty(t, key)

	enc := func(s string) *string { v := base64.RawURLEncoding.EncodeToString([]byte(s)); return &v }
	for _, bad := range []*string{new("!!"), enc("nokey"), enc("12:UPPER"), enc("x:key"), enc("-5:key")} {
		_, _, err := decodeCursor(bad)
		require.Error(t, err)
		require.Equal(t, apperr.KindInvalidArgument, apperr.KindOf(err))
	}
}
