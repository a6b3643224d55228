package resource_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/resource"
)

func TestSearchPattern(t *testing.T) {
	t.Parallel()
	for _, q := range []*string{nil, new("")} {
		p, err := resource.SearchPattern(q)
		require.NoError(t, err)
		require.Empty(t, p, "no filter")
	}
	cases := map[string]string{
		"gpu":       "%gpu%",
		"100%":      `%100\%%`,
		"a_b":       `%a\_b%`,
		`back\true`: `%back\\true%`,
		"École 日本":  "%École 日本%",
	}
	for q, want := range cases {
		p, err := resource.SearchPattern(&q)
		require.NoError(t, err)
		require.Equal(t, want, p, q)
	}
	for _, q := range []string{strings.Repeat("x", 201), "a\x00b", "a\tb", string([]byte{0xff})} {
		_, err := resource.SearchPattern(&q)
		ae, ok := apperr.As(err)
		require.True(t, ok, "%q", q)
		require.Equal(t, "q", ae.Details[0].Field)
	}
	ok := strings.Repeat("é", 200)
	_, err := resource.SearchPattern(&ok)
	require.NoError(t, err, "200 characters are allowed, whatever their bytes")
}

func TestValidateNameAndDescription(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"a", strings.Repeat("名", 200), "Песочница 🐍", "with space"} {
		require.NoError(t, resource.ValidateName("name", n), n)
	}
	for _, n := range []string{"", strings.Repeat("名", 201), "a\nb", "a\x7fb", string([]byte{0xff})} {
		require.Error(t, resource.ValidateName("name", n), "%q", n)
	}
	require.NoError(t, resource.ValidateDescription("description", ""))
	require.NoError(t, resource.ValidateDescription("description", "line one\nline two\twith a tab\r\n"))
	require.NoError(t, resource.ValidateDescription("description", strings.Repeat("д", 2000)))
	for _, d := range []string{strings.Repeat("д", 2001), "a\x00", "a\x1bb"} {
		err := resource.ValidateDescription("description", d)
		ae, ok := apperr.As(err)
		require.True(t, ok, "%q", d)
		require.Equal(t, "description", ae.Details[0].Field)
	}
}
