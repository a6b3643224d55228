package labels_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/labels"
)

// fields returns the detail fields of an invalid_argument error.
func fields(t *testing.T, err error) []string {
	t.Helper()
	e, ok := apperr.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apperr.KindInvalidArgument, e.Kind)
	var out []string
	for _, d := range e.Details {
		out = append(out, d.Field)
	}
	return out
}

func TestValidateAcceptsTheDocumentedShapes(t *testing.T) {
	t.Parallel()
	ok := map[string]string{
		"team":                                "search",
		"0":                                   "",
		"app.kubernetes.io/name":              "svc",
		"a_b-c":                               "with space and :colon",
		"k" + strings.Repeat("x", 62):         strings.Repeat("v", 63),
		"unicode":                             "caf\u00e9 \u65e5\u672c\u8a9e",
		"emoji":                               "\U0001F680",
		strings.Repeat("9", 63):               "x",
		"trailing-dash-":                      "ok",
		"dots.only.after.first":               "v",
		"slash/ok":                            "v",
		"digits123":                           "123",
		"value-of-exactly-63-multibyte-chars": strings.Repeat("\u00e9", 63),
	}
	require.NoError(t, labels.Validate(ok))
	require.NoError(t, labels.Validate(nil))
}

func TestValidateCounts(t *testing.T) {
	t.Parallel()
	m := map[string]string{}
	for i := range labels.MaxLabels {
		m["k"+strconv.Itoa(i)] = "v"
	}
	require.NoError(t, labels.Validate(m))
	m["one-more"] = "v"
	require.Equal(t, []string{"labels"}, fields(t, labels.Validate(m)))
}

func TestValidateRefusesBadKeysAndValues(t *testing.T) {
	t.Parallel()
	badKeys := []string{
		"", "Team", "-lead", ".lead", "_lead", "/lead", "has space", "k:v", "caf\u00e9",
		"\u0430pp", // Cyrillic a
		"k" + strings.Repeat("x", 63),
		"tab\t", "nul\x00",
	}
	for _, k := range badKeys {
		require.Equal(t, []string{"labels"}, fields(t, labels.Validate(map[string]string{k: "v"})), "key %q", k)
	}
	badValues := []string{
		strings.Repeat("v", 64),
		strings.Repeat("\u00e9", 64),
		"new\nline", "tab\t", "nul\x00", "del\x7f", "\u200b", // zero-width space is a format character
		string([]byte{0xff, 0xfe}),
	}
	for _, v := range badValues {
		require.Equal(t, []string{"labels.team"}, fields(t, labels.Validate(map[string]string{"team": v})), "value %q", v)
	}
	// Every offender is named, in key order.
	err := labels.Validate(map[string]string{"b": "\n", "A": "x", "ok": "fine", "a": strings.Repeat("x", 64)})
	require.Equal(t, []string{"labels", "labels.a", "labels.b"}, fields(t, err))
}

func TestParseSelectors(t *testing.T) {
	t.Parallel()
	got, err := labels.ParseSelectors([]string{"team:search", "tier:gold", "url:http://x", "empty:", "team:search"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"team": "search", "tier": "gold", "url": "http://x", "empty": ""}, got)

	got, err = labels.ParseSelectors(nil)
	require.NoError(t, err)
	require.Empty(t, got)

	eight := make([]string, labels.MaxSelectors)
	for i := range eight {
		eight[i] = "k" + strconv.Itoa(i) + ":v"
	}
	_, err = labels.ParseSelectors(eight)
	require.NoError(t, err)
	require.Equal(t, []string{"label"}, fields(t, func() error { _, err := labels.ParseSelectors(append(eight, "k8:v")); return err }()))

	for _, s := range []string{"novalue", ":v", "Team:v", "team:" + strings.Repeat("v", 64), "team:a\nb", "bad key:v"} {
		_, err := labels.ParseSelectors([]string{s})
		require.Equal(t, []string{"label"}, fields(t, err), "selector %q", s)
	}
	_, err = labels.ParseSelectors([]string{"team:a", "team:b"})
	require.Equal(t, []string{"label"}, fields(t, err), "one key with two values")
}
