// Package endpoint enforces the deployment's endpoint policy on every URL svc
// calls out to: provider base URLs and endpoints, probes, webhooks and every
// other outbound call (docs/decisions/0012-endpoint-policy.md).
//
// The policy is enforced twice. CheckURL runs when a URL is saved: it checks
// the scheme, user information, host and port, and resolves the host so that a
// name pointing at a private address is refused with a 400 naming the field.
// HTTPClient returns the client for the call itself: it repeats the URL checks
// on every request, resolves the host again and lets the connection proceed
// only when the code.dny.dev/ssrf guard, run as the dialer's Control function
// on the address actually being connected to, accepts it. The second check is
// what defeats DNS rebinding (a name that is public when saved and private when
// dialled). Proxy environment variables are ignored and redirects are not
// followed unless the caller opts in.
//
// An address is refused when it is private, loopback, link-local (cloud
// metadata services included), unspecified, multicast, shared (CGNAT) or
// otherwise special purpose per the IANA registries, unless one of the
// operator's allowed prefixes covers it. Only ports 80, 443 and the operator's
// allowed ports are reachable, or every port when the operator allows any.
// Plain HTTP needs the operator's allowance, for every host or for the listed
// hosts.
//
// Every refusal says what the policy refused and names the configuration key
// that would allow it (endpoint_policy.allow_http, allowed_hosts,
// allowed_ports, allow_any_port, allowed_prefixes, allowed_sockets), all of
// them at once when a URL breaks several rules, so an operator who means to
// allow the address learns in one try what to set.
package endpoint

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"code.dny.dev/ssrf"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/config"
)

// ResolveTimeout bounds one host name resolution, on write and at dial time.
const ResolveTimeout = 5 * time.Second

// maxURLLength bounds a checked URL; endpoints are never this long.
const maxURLLength = 2048

// Resolver resolves host names. *net.Resolver implements it; tests inject a
// fake one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Policy is the deployment's endpoint policy. Build it with NewPolicy; it must
// not be modified once in use, and is then safe for concurrent use.
type Policy struct {
	// AllowHTTP allows plain http:// URLs for every host.
	AllowHTTP bool
	// AllowedPrefixes are reachable even though they are private, loopback,
	// link-local or otherwise reserved. Only these prefixes are opened.
	AllowedPrefixes []netip.Prefix
	// AllowedPorts are reachable besides 80 and 443.
	AllowedPorts []uint16
	// AllowAnyPort makes every port reachable; AllowedPorts is then moot.
	AllowAnyPort bool
	// AllowedHosts may use plain http:// even when AllowHTTP is off. An entry
	// is a host name matched case-insensitively ("ollama.internal"), or
	// "*.suffix" matching every name below suffix. It grants only the scheme:
	// the host's addresses must still be public or in AllowedPrefixes.
	AllowedHosts []string
	// AllowedSockets are the Unix sockets (absolute, clean paths) a container
	// engine address may name. A socket reaches the machine itself, so none is
	// allowed unless listed.
	AllowedSockets []string
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
}

// NewPolicy builds the policy from the endpoint_policy configuration section.
// Errors name the offending key; config.Validate normally catches them first.
func NewPolicy(cfg config.EndpointPolicy) (*Policy, error) {
	p := &Policy{AllowHTTP: cfg.AllowHTTP, AllowAnyPort: cfg.AllowAnyPort}
	for i, s := range cfg.AllowedPrefixes {
		prefix, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("endpoint_policy.allowed_prefixes[%d]: %q is not a CIDR prefix", i, s)
		}
		p.AllowedPrefixes = append(p.AllowedPrefixes, prefix.Masked())
	}
	for i, port := range cfg.AllowedPorts {
		if port < 1 || port > 65535 {
			return nil, fmt.Errorf("endpoint_policy.allowed_ports[%d]: %d is not a port from 1 to 65535", i, port)
		}
		p.AllowedPorts = append(p.AllowedPorts, uint16(port))
	}
	p.AllowedHosts = cfg.AllowedHosts
	p.AllowedSockets = cfg.AllowedSockets
	if err := ValidateHosts(p.AllowedHosts); err != nil {
		return nil, err
	}
	return p, nil
}

// ValidateHosts checks allowed-host entries: a host name, or "*." followed by
// one, in ASCII.
func ValidateHosts(hosts []string) error {
	for i, h := range hosts {
		name := strings.TrimPrefix(h, "*.")
		if !validHostName(strings.TrimSuffix(name, ".")) {
			return fmt.Errorf("endpoint_policy.allowed_hosts[%d]: %q is not a host name or *.suffix", i, h)
		}
	}
	return nil
}

// CheckURL checks raw, the value of the request field named field, against
// the policy as it is saved. It resolves a host name with ctx, bounded by
// ResolveTimeout, and refuses it unless every address it resolves to is
// allowed. A refusal is an apperr invalid_argument naming field, with a short
// reason that never repeats a resolver's or a server's answer; a refusal by
// the policy's allowances (not a malformed URL) names, for each rule the URL
// breaks, the key that would allow it, and its cause matches ErrRefused.
func (p *Policy) CheckURL(ctx context.Context, field string, raw string) error {
	target, refusals, ok := p.checkURLString(raw)
	if !ok {
		return apperr.InvalidField(field, refusals[0])
	}
	if !target.addr.IsValid() {
		addrs, err := p.resolve(ctx, "ip", target.host)
		if err != nil {
			if len(refusals) == 0 {
				e := apperr.InvalidField(field, "host could not be resolved")
				e.Err = err // for logs only; never shown to the client
				return e
			}
			refusals = append(refusals, "host could not be resolved")
		}
		guard := p.guardian()
		for _, a := range addrs {
			if guard.SafeAddr(a) != nil {
				refusals = append(refusals, refusedResolved)
				break
			}
		}
	}
	if len(refusals) == 0 {
		return nil
	}
	reason := strings.Join(refusals, "; ")
	e := apperr.InvalidField(field, reason)
	e.Err = &CallError{Msg: refusedPrefix + reason, Refused: true}
	return e
}

// refusedPrefix starts the message of every call the policy refuses.
const refusedPrefix = "refused by the endpoint policy: "

// The reasons of refusals that an operator's allowance would lift, each
// naming its key.
const (
	refusedHTTP       = "must be an https URL (set endpoint_policy.allow_http = true to allow plain http)"
	refusedHTTPHost   = "must be an https URL (set endpoint_policy.allow_http = true, or list the host in endpoint_policy.allowed_hosts, to allow plain http)"
	refusedPortFormat = "port %d is not allowed (add it to endpoint_policy.allowed_ports, or set endpoint_policy.allow_any_port = true)"
	refusedAddress    = "must not point to %s (add a prefix that covers it to endpoint_policy.allowed_prefixes)"
	refusedResolved   = "host resolves to a private or reserved address (add a prefix that covers it to endpoint_policy.allowed_prefixes)"
	refusedSocket     = "the socket is not allowed (list it in endpoint_policy.allowed_sockets)"
)

// target is a URL that passed the checks that need no resolution.
type target struct {
	host string     // lower-case host name or IP literal, no brackets
	addr netip.Addr // the host as an address when it is an IP literal
	port uint16
}

// checkURLString parses raw and applies checkURL.
func (p *Policy) checkURLString(raw string) (target, []string, bool) {
	if len(raw) > maxURLLength {
		return target{}, []string{"must be at most 2048 characters"}, false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, []string{"must be a valid URL"}, false
	}
	return p.checkURL(u)
}

// checkURL applies every rule that needs no name resolution: scheme, user
// information, host form, port, and the address of an IP literal. A URL that
// is malformed, or that no allowance could open, gives one reason and ok
// false; otherwise ok is true and refusals lists every allowance the URL
// lacks (none when it passes).
func (p *Policy) checkURL(u *url.URL) (t target, refusals []string, ok bool) {
	fail := func(reason string) (target, []string, bool) { return target{}, []string{reason}, false }
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return fail("must be an https URL")
	}
	if u.User != nil {
		return fail("must not contain user information")
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return fail("must include a host")
	}
	host := strings.ToLower(u.Hostname())
	t = target{host: host}
	port, reason := parsePort(u.Port(), scheme)
	if reason != "" {
		return fail(reason)
	}
	t.port = port
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Zone() != "" {
			return fail("must not use an IPv6 zone")
		}
		t.addr = addr.Unmap()
	} else if !validHostName(strings.TrimSuffix(host, ".")) {
		// Also refuses every non-canonical spelling of an IPv4 address
		// (2130706433, 0x7f.1, 0177.0.0.1, 127.1): resolvers disagree on them.
		return fail("host must be a DNS name or an IP address in standard notation")
	}
	if scheme == "http" && !p.AllowHTTP && !p.hostAllowed(host) {
		if t.addr.IsValid() {
			refusals = append(refusals, refusedHTTP) // allowed_hosts lists names only
		} else {
			refusals = append(refusals, refusedHTTPHost)
		}
	}
	if !p.portAllowed(t.port) {
		refusals = append(refusals, fmt.Sprintf(refusedPortFormat, t.port))
	}
	if t.addr.IsValid() && p.guardian().SafeAddr(t.addr) != nil {
		refusals = append(refusals, fmt.Sprintf(refusedAddress, addressKind(t.addr)))
	}
	return t, refusals, true
}

// addressKind names the kind of a refused address, as a client may be told
// of the address it sent itself.
func addressKind(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified():
		return "an unspecified address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsMulticast():
		return "a multicast address"
	case a.IsPrivate():
		return "a private address"
	case sharedPrefix.Contains(a):
		return "a shared (carrier-grade NAT) address"
	default:
		return "a reserved address"
	}
}

// sharedPrefix is the shared address space of carrier-grade NAT (RFC 6598).
var sharedPrefix = netip.MustParsePrefix("100.64.0.0/10")

// parsePort returns the URL's port, or the scheme's default when it has none.
func parsePort(s, scheme string) (uint16, string) {
	if s == "" {
		if scheme == "http" {
			return 80, ""
		}
		return 443, ""
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, "port is not valid"
	}
	return uint16(n), ""
}

// validHostName reports whether s is an ASCII DNS name whose last label is not
// numeric, so that no spelling of an IPv4 address passes as a name.
func validHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
			if !ok {
				return false
			}
		}
	}
	return !numericLabel(strings.ToLower(labels[len(labels)-1]))
}

// numericLabel reports whether l reads as a number in decimal, octal or hex,
// as inet_aton would parse it.
func numericLabel(l string) bool {
	digits := l
	hex := strings.HasPrefix(l, "0x")
	if hex {
		digits = l[2:]
		if digits == "" {
			return true // "0x" alone is 0 to inet_aton
		}
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c >= '0' && c <= '9' || hex && c >= 'a' && c <= 'f' {
			continue
		}
		return false
	}
	return true
}

// hostAllowed reports whether host (lower case) is in AllowedHosts.
func (p *Policy) hostAllowed(host string) bool {
	host = strings.TrimSuffix(host, ".")
	for _, entry := range p.AllowedHosts {
		entry = strings.TrimSuffix(strings.ToLower(entry), ".")
		if suffix, ok := strings.CutPrefix(entry, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == entry {
			return true
		}
	}
	return false
}

// ports lists the reachable ports (all of them when AllowAnyPort is set).
func (p *Policy) ports() []uint16 {
	return append([]uint16{80, 443}, p.AllowedPorts...)
}

// portAllowed reports whether port is reachable.
func (p *Policy) portAllowed(port uint16) bool {
	return p.AllowAnyPort || slices.Contains(p.ports(), port)
}

// guardian is the ssrf guard for the policy: the same rules decide on write
// and at connect time.
func (p *Policy) guardian() *ssrf.Guardian {
	var v4, v6 []netip.Prefix
	for _, prefix := range p.AllowedPrefixes {
		addr := prefix.Addr()
		switch {
		case addr.Is4():
			v4 = append(v4, prefix)
		case addr.Is4In6() && prefix.Bits() >= 96:
			// ::ffff:10.0.0.0/104 means 10.0.0.0/8; connections to mapped
			// addresses are made, and checked, as IPv4.
			v4 = append(v4, netip.PrefixFrom(addr.Unmap(), prefix.Bits()-96))
		default:
			v6 = append(v6, prefix)
		}
	}
	ports := ssrf.WithPorts(p.ports()...)
	if p.AllowAnyPort {
		ports = ssrf.WithAnyPort()
	}
	return ssrf.New(
		ports,
		ssrf.WithAllowedV4Prefixes(v4...),
		ssrf.WithAllowedV6Prefixes(v6...),
	)
}

// resolve resolves host within ResolveTimeout and returns its addresses,
// IPv4-mapped ones unmapped. An empty answer is an error.
func (p *Policy) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, ResolveTimeout)
	defer cancel()
	var r Resolver = net.DefaultResolver
	if p.Resolver != nil {
		r = p.Resolver
	}
	addrs, err := r.LookupNetIP(ctx, network, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		out[i] = a.Unmap()
	}
	return out, nil
}
