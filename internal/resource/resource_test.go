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

// A page reads one row more than its limit: a full last page answers no
// cursor, and a page with rows after it answers the cursor after its last item.
func TestPageOfReadsOneRowAhead(t *testing.T) {
	t.Parallel()
	id := func(s string) string { return s }
	require.EqualValues(t, 3, resource.Fetch(2))

	last := resource.PageOf([]string{"c", "b"}, 2, id, id)
	require.Equal(t, []string{"c", "b"}, last.Items)
	require.Nil(t, last.NextCursor, "a full page with nothing after it is the last")

	full := resource.PageOf([]string{"c", "b", "a"}, 2, id, id)
	require.Equal(t, []string{"c", "b"}, full.Items, "the row read ahead is not shown")
	require.NotNil(t, full.NextCursor)
	after, err := resource.AfterID(full.NextCursor)
	require.NoError(t, err)
	require.Equal(t, "b", after)

	short, err := resource.PageOfErr([]string{"a"}, 2, func(s string) (string, error) { return s, nil }, id)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, short.Items)
	require.Nil(t, short.NextCursor)

	empty := resource.PageOf([]string{}, 2, id, id)
	require.Empty(t, empty.Items)
	require.Nil(t, empty.NextCursor)
}
