package ratelimit

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Clients tells which client a request comes from, as rate limits count it.
type Clients struct {
	trusted []netip.Prefix
}

// NewClients returns a resolver that reads X-Forwarded-For only from the
// proxies in trustedProxies (server.trusted_proxies, CIDR prefixes).
func NewClients(trustedProxies []string) (*Clients, error) {
	trusted := make([]netip.Prefix, 0, len(trustedProxies))
	for _, p := range trustedProxies {
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			return nil, fmt.Errorf("server.trusted_proxies: %q is not a CIDR prefix", p)
		}
		trusted = append(trusted, prefix.Masked())
	}
	return &Clients{trusted: trusted}, nil
}

// Addr is the address rate limits count req against: the connection's peer,
// or, when the peer is a trusted proxy, the right-most X-Forwarded-For address
// that is not itself a trusted proxy (a malformed entry stops the walk).
// IPv6 clients are counted per /64, the block one subscriber usually holds.
// An unparsable peer gives "".
func (c *Clients) Addr(req *http.Request) string {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		host = req.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return ""
	}
	addr = addr.Unmap()
	if c.isTrusted(addr) {
		hops := strings.Split(strings.Join(req.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // a malformed entry: trust nothing to its left
			}
			addr = hop.Unmap()
			if !c.isTrusted(addr) {
				break
			}
		}
	}
	if addr.Is6() {
		return netip.PrefixFrom(addr, 64).Masked().String()
	}
	return addr.String()
}

func (c *Clients) isTrusted(a netip.Addr) bool {
	for _, p := range c.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

type clientAddrKey struct{}

// WithClientAddr returns ctx carrying the client address of its request.
func WithClientAddr(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientAddrKey{}, addr)
}

// ClientAddr returns the client address ctx carries, or "".
func ClientAddr(ctx context.Context) string {
	a, _ := ctx.Value(clientAddrKey{}).(string)
	return a
}
