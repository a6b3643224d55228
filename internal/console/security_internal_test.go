package console

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHumanDuration(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1 hour", humanDuration(3600e9))
	require.Equal(t, "2 days", humanDuration(2*86400e9))
	require.Equal(t, "30 minutes", humanDuration(1800e9))
	require.Equal(t, "45 seconds", humanDuration(45e9))
	require.Equal(t, "The two passwords differ.", sentence("the two passwords differ"))
}
