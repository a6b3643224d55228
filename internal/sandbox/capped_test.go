package sandbox_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/sandbox"
)

func TestCappedWriter(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		limit     int
		writes    []string
		kept      string
		truncated bool
	}{
		{"Nothing", 4, nil, "", false},
		{"EmptyWriteAtLimit", 2, []string{"ab", ""}, "ab", false},
		{"UnderLimit", 4, []string{"ab", "c"}, "abc", false},
		{"ExactlyLimit", 4, []string{"ab", "cd"}, "abcd", false},
		{"CutInsideAWrite", 4, []string{"ab", "cdef"}, "abcd", true},
		{"WriteAfterFull", 2, []string{"ab", "c"}, "ab", true},
		{"ZeroLimit", 0, []string{"a"}, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := sandbox.NewCappedWriter(c.limit)
			for _, s := range c.writes {
				n, err := w.Write([]byte(s))
				require.NoError(t, err)
				require.Equal(t, len(s), n, "every byte counts as written")
			}
			require.Equal(t, c.kept, w.String())
			require.Equal(t, c.kept, string(w.Bytes()))
			require.Equal(t, c.truncated, w.Truncated())
		})
	}
}
