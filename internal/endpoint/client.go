package endpoint

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"code.dny.dev/ssrf"
)

// Time-outs of the phases of an outbound call. A client's overall time-out
// caps them when it is shorter.
const (
	ConnectTimeout      = 10 * time.Second
	TLSHandshakeTimeout = 10 * time.Second
)

// maxRedirects bounds the hops a client built with FollowRedirects(true) follows.
const maxRedirects = 5

// ErrRefused matches (errors.Is) every error of an outbound call that the
// endpoint policy refused, whether before the request (URL rules), on a
// redirect, or at connect time (address or port).
var ErrRefused = errors.New("endpoint: refused by the endpoint policy")

// CallError is the failure of an outbound call made by a policy client. Its
// message is fixed text, safe to show to a client: it never carries an
// address, a resolver's answer or a server's response. Err is the cause, for
// logs and errors.Is/As, and is never shown.
type CallError struct {
	Msg     string
	Refused bool // the policy refused the call; errors.Is(err, ErrRefused)
	Err     error
}

func (e *CallError) Error() string { return "endpoint: " + e.Msg }

// Unwrap returns the cause.
func (e *CallError) Unwrap() error { return e.Err }

// Is reports whether target is ErrRefused and the policy refused the call.
func (e *CallError) Is(target error) bool { return e.Refused && target == ErrRefused }

// Timeout reports whether the cause is a time-out, so that url.Error and
// net.Error users see one.
func (e *CallError) Timeout() bool {
	var ne net.Error
	return errors.Is(e.Err, context.DeadlineExceeded) || errors.As(e.Err, &ne) && ne.Timeout()
}

// ClientOption configures HTTPClient.
type ClientOption func(*clientOptions)

type clientOptions struct {
	followRedirects bool
	tlsConfig       *tls.Config
	connectTimeout  time.Duration
}

// WithConnectTimeout bounds connecting (each address tried) by d instead of
// ConnectTimeout; the client's overall time-out still caps it when shorter.
// Zero or less keeps ConnectTimeout.
func WithConnectTimeout(d time.Duration) ClientOption {
	return func(o *clientOptions) { o.connectTimeout = d }
}

// WithTLSConfig makes the client use cfg (a private CA or a client
// certificate, say) for https. Its minimum version is raised to TLS 1.2.
func WithTLSConfig(cfg *tls.Config) ClientOption {
	return func(o *clientOptions) { o.tlsConfig = cfg }
}

// FollowRedirects makes the client follow up to 5 redirects on the same host
// name, never from https to http; each hop passes the URL rules and the
// connect-time address check again. By default (and for webhooks, always) a
// client does not follow redirects: the 3xx response is returned as it is.
// Redirects to other hosts are refused even when following, because a
// provider's credential may travel in a header Go does not strip.
func FollowRedirects(follow bool) ClientOption {
	return func(o *clientOptions) { o.followRedirects = follow }
}

// HTTPClient returns a client that enforces the policy on every call. timeout
// bounds a whole call, reading the response body included, and the wait for
// response headers; zero or less means no overall bound (use the request's
// context), for streamed responses. Connecting and the TLS handshake are
// bounded by ConnectTimeout (or WithConnectTimeout) and TLSHandshakeTimeout.
//
// The client ignores proxy environment variables, refuses URLs that break the
// policy's URL rules, resolves host names itself (with the policy's Resolver)
// and connects through a net.Dialer whose Control function is the ssrf guard,
// so every address actually connected to is checked. Each call to HTTPClient
// makes a new connection pool: build a client once and reuse it.
func (p *Policy) HTTPClient(timeout time.Duration, opts ...ClientOption) *http.Client {
	var o clientOptions
	for _, opt := range opts {
		opt(&o)
	}
	timeout = max(timeout, 0)
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.tlsConfig != nil {
		tlsConfig = o.tlsConfig.Clone()
		tlsConfig.MinVersion = max(tlsConfig.MinVersion, tls.VersionTLS12)
	}
	connect := ConnectTimeout
	if o.connectTimeout > 0 {
		connect = o.connectTimeout
	}
	dialer := &net.Dialer{
		Timeout:   capTimeout(connect, timeout),
		KeepAlive: 30 * time.Second,
		Control:   p.guardian().Safe,
	}
	base := &http.Transport{
		Proxy:                  nil, // never HTTP(S)_PROXY: a proxy would dial for us, unguarded
		DialContext:            p.dialContext(dialer),
		ForceAttemptHTTP2:      true,
		TLSClientConfig:        tlsConfig,
		TLSHandshakeTimeout:    capTimeout(TLSHandshakeTimeout, timeout),
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    16,
		MaxResponseHeaderBytes: 1 << 20,
	}
	client := &http.Client{Transport: &transport{policy: p, base: base, dialer: dialer}, Timeout: timeout}
	if o.followRedirects {
		client.CheckRedirect = checkRedirect
	} else {
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return client
}

func capTimeout(d, limit time.Duration) time.Duration {
	if limit > 0 && limit < d {
		return limit
	}
	return d
}

// checkRedirect allows a redirect on the same host name, without a downgrade
// to http, up to maxRedirects hops. The transport checks the new URL and the
// dialer its addresses.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return &CallError{Msg: "too many redirects", Refused: true}
	}
	if !strings.EqualFold(req.URL.Hostname(), via[0].URL.Hostname()) {
		return &CallError{Msg: "redirect to another host refused", Refused: true}
	}
	if strings.EqualFold(via[len(via)-1].URL.Scheme, "https") && !strings.EqualFold(req.URL.Scheme, "https") {
		return &CallError{Msg: "redirect from https to http refused", Refused: true}
	}
	return nil
}

// transport applies the URL rules to every request, redirects included,
// before handing it to the guarded base transport.
type transport struct {
	policy *Policy
	base   *http.Transport
	dialer *net.Dialer // base's, kept for inspection
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, refusals, _ := t.policy.checkURL(req.URL); len(refusals) > 0 {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, &CallError{Msg: refusedPrefix + strings.Join(refusals, "; "), Refused: true}
	}
	return t.base.RoundTrip(req)
}

// CloseIdleConnections closes the base transport's idle connections, so that
// http.Client.CloseIdleConnections reaches them.
func (t *transport) CloseIdleConnections() { t.base.CloseIdleConnections() }

// dialContext resolves the host with the policy's resolver and connects to its
// addresses in turn through d, whose Control guard refuses any address or port
// the policy does not allow. Resolving here rather than in net.Dialer keeps one
// resolver for write and dial checks; the guard sees the final address either way.
func (p *Policy) dialContext(d *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, portText, err := net.SplitHostPort(address)
		if err != nil {
			return nil, &CallError{Msg: "invalid endpoint address", Refused: true, Err: err}
		}
		port, err := strconv.ParseUint(portText, 10, 16)
		if err != nil {
			return nil, &CallError{Msg: "invalid endpoint port", Refused: true, Err: err}
		}
		var addrs []netip.Addr
		if a, perr := netip.ParseAddr(host); perr == nil {
			addrs = []netip.Addr{a.Unmap()}
		} else if addrs, err = p.resolve(ctx, lookupNetwork(network), host); err != nil {
			return nil, &CallError{Msg: "endpoint host could not be resolved", Err: err}
		}
		var refused, failed error
		for _, a := range addrs {
			conn, err := d.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
			if err == nil {
				return conn, nil
			}
			if isGuardError(err) {
				refused = cmp.Or(refused, err)
			} else {
				failed = cmp.Or(failed, err)
			}
			if ctx.Err() != nil {
				break
			}
		}
		if refused != nil {
			return nil, &CallError{Msg: dialRefusal(refused), Refused: true, Err: refused}
		}
		return nil, &CallError{Msg: "could not connect to the endpoint", Err: failed}
	}
}

// dialRefusal words the guard's refusal of a connection, naming the key that
// would allow it but never the address (which a resolver chose).
func dialRefusal(err error) string {
	if errors.Is(err, ssrf.ErrProhibitedPort) {
		return refusedPrefix + "the port is not allowed (add it to endpoint_policy.allowed_ports, or set endpoint_policy.allow_any_port = true)"
	}
	return refusedPrefix + "the host's address is private or reserved (add a prefix that covers it to endpoint_policy.allowed_prefixes)"
}

// Refusal returns the message of the policy refusal err carries, fixed text
// that says what was refused and names the key that would allow it, and
// whether err is one. Code that reports a refused call to a client or a
// tenant shows this message.
func Refusal(err error) (string, bool) {
	var ce *CallError
	if errors.As(err, &ce) && ce.Refused {
		return ce.Msg, true
	}
	return "", false
}

func isGuardError(err error) bool {
	return errors.Is(err, ssrf.ErrProhibitedIP) || errors.Is(err, ssrf.ErrProhibitedPort) ||
		errors.Is(err, ssrf.ErrProhibitedNetwork) || errors.Is(err, ssrf.ErrInvalidHostPort)
}

// lookupNetwork maps a dial network to the resolver network.
func lookupNetwork(network string) string {
	switch network {
	case "tcp4":
		return "ip4"
	case "tcp6":
		return "ip6"
	default:
		return "ip"
	}
}
