package labels_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/labels"
)

// fieldsOf returns the detail fields of an invalid_argument error.
func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	ae, ok := apperr.As(err)
	require.True(t, ok, "an apperr: %v", err)
	require.Equal(t, apperr.KindInvalidArgument, ae.Kind)
	var out []string
	for _, d := range ae.Details {
		out = append(out, d.Field)
	}
	return out
}

func TestValidKey(t *testing.T) {
	t.Parallel()
	longest := "a" + strings.Repeat("b", 62)
	for _, k := range []string{"a", "0", "team", "app.kubernetes.io/name", "a_b", "a-b", "x/y/z", longest} {
		require.True(t, labels.ValidKey(k), "%q", k)
	}
	for _, k := range []string{
		"", longest + "c", "Team", "-a", ".a", "_a", "/a", "a b", "a:b", "a=b",
		"\u0430pp",  // Cyrillic a
		"app\u200b", // zero-width space
		"caf\u00e9", // accented letter
		"a\n",
	} {
		require.False(t, labels.ValidKey(k), "%q", k)
	}
}

func TestValidValue(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "prod", "Prod Env", "a:b=c", "日本語", "🚀", strings.Repeat("é", 63)} {
		require.True(t, labels.ValidValue(v), "%q", v)
	}
	for _, v := range []string{
		strings.Repeat("a", 64), strings.Repeat("é", 64),
		"a\tb", "a\nb", "a\x00", "a\x7f", "a\u200bb", "a\u00a0b", "a\u2028b", string([]byte{0xff}),
	} {
		require.False(t, labels.ValidValue(v), "%q", v)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, labels.Validate(nil))
	require.NoError(t, labels.Validate(map[string]string{"env": "prod", "team": ""}))

	full := map[string]string{}
	for i := range labels.MaxLabels {
		full["k"+strconv.Itoa(i)] = "v"
	}
	require.NoError(t, labels.Validate(full), "32 labels are allowed")
	full["k32"] = "v"
	err := labels.Validate(full)
	require.Equal(t, []string{"labels"}, fieldsOf(t, err), "33 labels are refused")

	err = labels.Validate(map[string]string{"Bad Key": "v", "env": strings.Repeat("x", 64), "ok": "fine"})
	require.Equal(t, []string{"labels", "labels.env"}, fieldsOf(t, err), "each refusal named, keys before values by key order")
	ae, _ := apperr.As(err)
	require.Contains(t, ae.Details[0].Reason, `"Bad Key"`)

	long := strings.Repeat("K", 500)
	err = labels.Validate(map[string]string{long: "v"})
	ae, _ = apperr.As(err)
	require.Less(t, len(ae.Details[0].Reason), 400, "a long key is not echoed whole")
}

func TestParseSelectors(t *testing.T) {
	t.Parallel()
	got, err := labels.ParseSelectors([]string{"env:prod", "url:https://x:1", "empty:", "team:Core Team"})
	require.NoError(t, err)
	require.Equal(t, []labels.Selector{{"env", "prod"}, {"url", "https://x:1"}, {"empty", ""}, {"team", "Core Team"}}, got)
	require.Equal(t, "url:https://x:1", got[1].String())

	none, err := labels.ParseSelectors(nil)
	require.NoError(t, err)
	require.Empty(t, none)

	eight := make([]string, labels.MaxSelectors)
	for i := range eight {
		eight[i] = "k" + strconv.Itoa(i) + ":v"
	}
	_, err = labels.ParseSelectors(eight)
	require.NoError(t, err, "8 selectors are allowed")
	_, err = labels.ParseSelectors(append(eight, "k8:v"))
	require.Equal(t, []string{"label"}, fieldsOf(t, err), "9 selectors are refused")
	same := []string{"a:b", "a:b", "a:b", "a:b", "a:b", "a:b", "a:b", "a:b", "a:b"}
	_, err = labels.ParseSelectors(same)
	require.Equal(t, []string{"label"}, fieldsOf(t, err), "repeats count too")

	for _, bad := range []string{"env", "", ":prod", "Env:prod", "env:" + strings.Repeat("x", 64), "env:a\nb", "\u0435nv:prod"} {
		_, err := labels.ParseSelectors([]string{"ok:yes", bad})
		require.Equal(t, []string{"label"}, fieldsOf(t, err), "%q", bad)
	}
}

func TestFilter(t *testing.T) {
	t.Parallel()
	f, ok := labels.Filter("ws_1", nil)
	require.True(t, ok)
	require.Nil(t, f, "no selectors, no filter")

	f, ok = labels.Filter("ws_1", []labels.Selector{{"team", "core"}, {"env", "prod"}, {"env", "prod"}})
	require.True(t, ok)
	require.JSONEq(t, `{"":"ws_1","env":"prod","team":"core"}`, string(f), "one object scoped by the workspace; repeats count once")
	require.False(t, labels.ValidKey(labels.ScopeKey), "the scope key is never a label key")

	_, ok = labels.Filter("ws_1", []labels.Selector{{"env", "prod"}, {"env", "dev"}})
	require.False(t, ok, "one key cannot have two values: nothing matches")
}

func TestEncodeDecode(t *testing.T) {
	t.Parallel()
	require.Equal(t, "{}", string(labels.Encode(nil)))
	raw := labels.Encode(map[string]string{"b": "2", "a": "1"})
	require.Equal(t, `{"a":"1","b":"2"}`, string(raw), "sorted keys")
	back, err := labels.Decode(raw)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "1", "b": "2"}, back)
	empty, err := labels.Decode(nil)
	require.NoError(t, err)
	require.Equal(t, map[string]string{}, empty)
	require.True(t, labels.Equal(nil, map[string]string{}))
	require.False(t, labels.Equal(map[string]string{"a": "1"}, map[string]string{"a": "2"}))
}
