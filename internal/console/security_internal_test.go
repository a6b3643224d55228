package console

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClientAddr(t *testing.T) {
	t.Parallel()
	c := &Console{trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}}
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
		require.Equal(t, tc.want, c.clientAddr(req), tc.name)
	}
	none := &Console{}
	req := &http.Request{RemoteAddr: "10.1.2.3:80", Header: http.Header{"X-Forwarded-For": {"198.51.100.1"}}}
	require.Equal(t, "10.1.2.3", none.clientAddr(req), "no trusted proxies: the header is never read")
}

func TestHumanDuration(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1 hour", humanDuration(3600e9))
	require.Equal(t, "2 days", humanDuration(2*86400e9))
	require.Equal(t, "30 minutes", humanDuration(1800e9))
	require.Equal(t, "45 seconds", humanDuration(45e9))
	require.Equal(t, "The two passwords differ.", sentence("the two passwords differ"))
}
