package endpoint

import (
	"net"
	"net/netip"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDialContextAppliesThePolicy(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	addr := func(host string) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
	ctx := t.Context()

	// The default policy refuses loopback, by address and by a name that
	// resolves to it, without naming the address.
	strict := &Policy{Resolver: newResolver()}
	for _, host := range []string{"127.0.0.1", "api.test", "localhost"} {
		_, err := strict.DialContext(ctx, "tcp", addr(host))
		requireCallRefused(t, err)
	}

	// Allowing the prefix alone is not enough: the port must be allowed too.
	prefixOnly := &Policy{Resolver: newResolver(), AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	_, err = prefixOnly.DialContext(ctx, "tcp", addr("api.test"))
	requireCallRefused(t, err)

	open := &Policy{Resolver: newResolver(), AllowedPrefixes: prefixOnly.AllowedPrefixes, AllowedPorts: []uint16{uint16(port)}}
	conn, err := open.DialContext(ctx, "tcp", addr("api.test"))
	require.NoError(t, err)
	require.NoError(t, conn.Close())

	_, err = open.DialContext(ctx, "tcp", "api.test")
	require.ErrorIs(t, err, ErrRefused, "an address without a port is refused")
	_, err = open.DialContext(ctx, "tcp", addr("empty.test"))
	var ce *CallError
	require.ErrorAs(t, err, &ce)
	require.NotErrorIs(t, err, ErrRefused, "a name without addresses fails without a refusal")
}
