package vendortext_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/vendortext"
)

func TestClean(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		max     int
		secrets []string
		want    string
	}{
		{name: "plain", in: "image not found", max: 100, want: "image not found"},
		{name: "control characters and runs of space", in: " a\x00\x1b[31m b\r\n\tc \x7f", max: 100, want: "a [31m b c"},
		{name: "invalid UTF-8", in: "bad \xff byte", max: 100, want: "bad \uFFFD byte"},
		{name: "secret and its echoed prefix", in: "Incorrect API key provided: sk-abcdefghijkl, or sk-abcde***kl", max: 100,
			secrets: []string{"sk-abcdefghijkl"}, want: "Incorrect API key provided: [redacted], or [redacted]***kl"},
		{name: "short secrets are ignored", in: "an id", max: 100, secrets: []string{"id"}, want: "an id"},
		{name: "cut on a rune boundary", in: "ab" + strings.Repeat("é", 10), max: 5, want: "abé..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, vendortext.Clean(tc.in, tc.max, tc.secrets...))
		})
	}
}
