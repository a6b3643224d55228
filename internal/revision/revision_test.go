package revision_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/revision"
)

func TestCanonical(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"keys sorted at every depth", map[string]any{"b": 1, "a": map[string]any{"d": true, "c": nil}}, `{"a":{"c":null,"d":true},"b":1}`},
		{"struct fields sorted by their JSON names", struct {
			Zed   string `json:"zed"`
			Alpha int    `json:"alpha"`
		}{"z", 1}, `{"alpha":1,"zed":"z"}`},
		{"no insignificant space", json.RawMessage(`{ "a" : [ 1 , 2 ] }`), `{"a":[1,2]}`},
		{"numbers in their shortest form", json.RawMessage(`{"a":1.0,"b":1e3,"c":0.50}`), `{"a":1,"b":1000,"c":0.5}`},
		{"no HTML escaping", map[string]string{"html": "<b>&</b>"}, `{"html":"<b>&</b>"}`},
		{"arrays keep their order", []any{"b", "a"}, `["b","a"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := revision.Canonical(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}
}

func TestContentHash(t *testing.T) {
	t.Parallel()
	a, err := revision.Canonical(json.RawMessage(`{"b":2,"a":1}`))
	require.NoError(t, err)
	b, err := revision.Canonical(json.RawMessage(`{"a":1.0, "b":2}`))
	require.NoError(t, err)
	require.Equal(t, revision.ContentHash(a), revision.ContentHash(b), "equal content, equal identity")
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, revision.ContentHash(a))
	// sha256 of the empty object's canonical bytes.
	require.Equal(t, "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", revision.ContentHash([]byte(`{}`)))
	require.NotEqual(t, revision.ContentHash(a), revision.ContentHash([]byte(`{"a":1,"b":3}`)))
}

func TestKindPrefix(t *testing.T) {
	t.Parallel()
	require.Equal(t, "ap", revision.KindAgent.Prefix())
	require.Equal(t, "sk", revision.KindSkill.Prefix())
}
