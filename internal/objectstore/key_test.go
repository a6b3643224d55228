package objectstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/objectstore"
)

// TestKey: keys always start with their workspace, and ids that would steer
// them elsewhere are refused.
func TestKey(t *testing.T) {
	t.Parallel()
	key, err := objectstore.Key("ws_01jd5v6w1q3yb8j8y3tn9z2k7h", "assets", "as_01jd5v6w1q3yb8j8y3tn9z2k7h")
	require.NoError(t, err)
	require.Equal(t, "ws/ws_01jd5v6w1q3yb8j8y3tn9z2k7h/assets/as_01jd5v6w1q3yb8j8y3tn9z2k7h", key)
	for _, parts := range [][]string{
		{"..", "assets", "x"}, {"ws_1/../ws_2", "assets", "x"}, {"ws_1", "assets", "../x"}, {"ws_1", "assets", "a/../../b"},
		{"ws_1", "assets", ""}, {"", "assets", "x"}, {"ws_1"}, {"ws_1", `a\b`}, {"ws_1", "a\x00"}, {"/abs", "x"},
	} {
		_, err := objectstore.Key(parts[0], parts[1:]...)
		require.ErrorIs(t, err, objectstore.ErrInvalidKey, "%q", parts)
	}
}
