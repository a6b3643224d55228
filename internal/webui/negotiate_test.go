package webui

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAcceptsGzip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values []string
		want   bool
	}{
		{"absent", nil, false},
		{"empty", []string{""}, false},
		{"gzip", []string{"gzip"}, true},
		{"browser list", []string{"gzip, deflate, br, zstd"}, true},
		{"case insensitive", []string{"GZip;Q=0.5"}, true},
		{"x-gzip alias", []string{"x-gzip"}, true},
		{"gzip refused", []string{"gzip;q=0"}, false},
		{"gzip refused with decimals", []string{"gzip; q=0.000"}, false},
		{"low but positive q", []string{"gzip;q=0.001"}, true},
		{"star", []string{"*"}, true},
		{"star refused", []string{"*;q=0"}, false},
		{"star with other coding", []string{"br, *;q=0.5"}, true},
		{"explicit gzip refusal beats star", []string{"gzip;q=0, *"}, false},
		{"explicit gzip beats star refusal", []string{"*;q=0, gzip"}, true},
		{"identity only", []string{"identity"}, false},
		{"other codings only", []string{"br, deflate"}, false},
		{"malformed q is a refusal", []string{"gzip;q=abc"}, false},
		{"q above one is a refusal", []string{"gzip;q=2"}, false},
		{"other params ignored", []string{"gzip;level=9"}, true},
		{"split across field lines", []string{"br", "gzip"}, true},
		{"empty entries skipped", []string{" , ,gzip,"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, acceptsGzip(tt.values), "Accept-Encoding: %q", tt.values)
		})
	}
}

func TestETagMatches(t *testing.T) {
	t.Parallel()
	const etag = `"abc123"`
	tests := []struct {
		name   string
		values []string
		want   bool
	}{
		{"absent", nil, false},
		{"exact", []string{`"abc123"`}, true},
		{"weak form matches (weak comparison)", []string{`W/"abc123"`}, true},
		{"in a list", []string{`"zzz", "abc123"`}, true},
		{"across field lines", []string{`"zzz"`, `"abc123"`}, true},
		{"star", []string{"*"}, true},
		{"different", []string{`"abc124"`}, false},
		{"unquoted", []string{"abc123"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, etagMatches(tt.values, etag), "If-None-Match: %q", tt.values)
		})
	}
}
