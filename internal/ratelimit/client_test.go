package ratelimit_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/ratelimit"
)

func TestClientAddr(t *testing.T) {
	t.Parallel()
	c, err := ratelimit.NewClients([]string{"10.0.0.0/8", "fd00::/8"})
	require.NoError(t, err)
	cases := []struct {
		name, remote, xff, want string
	}{
		{"direct", "203.0.113.7:5123", "", "203.0.113.7"},
		{"untrusted peer's header is ignored", "203.0.113.7:5123", "198.51.100.1", "203.0.113.7"},
		{"trusted proxy", "10.1.2.3:80", "198.51.100.1", "198.51.100.1"},
		{"proxy chain: right-most untrusted", "10.1.2.3:80", "192.0.2.9, 198.51.100.1, 10.9.9.9", "198.51.100.1"},
		{"spoofed left entries do not count", "10.1.2.3:80", "1.1.1.1, 198.51.100.1", "198.51.100.1"},
		{"malformed entry stops the walk", "10.1.2.3:80", "198.51.100.1, garbage", "10.1.2.3"},
		{"trusted proxy without header", "10.1.2.3:80", "", "10.1.2.3"},
		{"IPv6 per /64", "[2001:db8:1:2:3:4:5:6]:443", "", "2001:db8:1:2::/64"},
		{"IPv6 through a trusted IPv6 proxy", "[fd00::1]:443", "2001:db8:aa:bb::1", "2001:db8:aa:bb::/64"},
		{"IPv4-mapped", "[::ffff:203.0.113.7]:1", "", "203.0.113.7"},
		{"unparsable", "pipe", "", ""},
	}
	for _, tc := range cases {
		req := &http.Request{RemoteAddr: tc.remote, Header: http.Header{}}
		if tc.xff != "" {
			req.Header.Set("X-Forwarded-For", tc.xff)
		}
		require.Equal(t, tc.want, c.Addr(req), tc.name)
	}
	none, err := ratelimit.NewClients(nil)
	require.NoError(t, err)
	req := &http.Request{RemoteAddr: "10.1.2.3:80", Header: http.Header{"X-Forwarded-For": {"198.51.100.1"}}}
	require.Equal(t, "10.1.2.3", none.Addr(req), "no trusted proxies: the header is never read")

	_, err = ratelimit.NewClients([]string{"10.0.0.1"})
	require.ErrorContains(t, err, "server.trusted_proxies")

	ctx := ratelimit.WithClientAddr(context.Background(), "203.0.113.7")
	require.Equal(t, "203.0.113.7", ratelimit.ClientAddr(ctx))
	require.Empty(t, ratelimit.ClientAddr(context.Background()))
}
