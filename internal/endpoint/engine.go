package endpoint

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/apperr"
)

// A container engine (the docker provider type) is reached at an address of
// the form unix:///path/to/socket or tcp://host:port. A tcp address is an HTTP
// endpoint like any other: https when the connection uses TLS, http otherwise,
// and both the URL rules and the connect-time guard apply. A unix socket
// reaches the machine svc runs on, so only the operator's allowed sockets may
// be named.

// engineSocketHost is the host name of the URLs sent over a Unix socket; the
// engine ignores it.
const engineSocketHost = "engine.sock"

// engineAddress is a parsed engine address.
type engineAddress struct {
	socket string // the socket path, for unix://
	url    string // the base URL, for tcp://
}

// parseEngine parses raw; reason is set when it is refused.
func (p *Policy) parseEngine(raw string, useTLS bool) (addr engineAddress, reason string) {
	switch {
	case strings.HasPrefix(raw, "unix://"):
		path := strings.TrimPrefix(raw, "unix://")
		if !filepath.IsAbs(path) || filepath.Clean(path) != path {
			return addr, "a unix socket must be a clean absolute path"
		}
		if !slices.Contains(p.AllowedSockets, path) {
			return addr, refusedSocket
		}
		return engineAddress{socket: path}, ""
	case strings.HasPrefix(raw, "tcp://"):
		hostPort := strings.TrimPrefix(raw, "tcp://")
		if strings.ContainsAny(hostPort, "/?#@") {
			return addr, "a tcp address is host:port, without a path"
		}
		scheme := "http://"
		if useTLS {
			scheme = "https://"
		}
		return engineAddress{url: scheme + hostPort}, ""
	default:
		return addr, "the address must start with unix:// or tcp://"
	}
}

// CheckEngine checks raw, a container-engine address in the request field
// named field, as it is saved: a unix socket must be allowed; a tcp address is
// checked as the https (useTLS) or http URL it is called at, with CheckURL.
func (p *Policy) CheckEngine(ctx context.Context, field, raw string, useTLS bool) error {
	addr, reason := p.parseEngine(raw, useTLS)
	if reason != "" {
		e := apperr.InvalidField(field, reason)
		if reason == refusedSocket {
			e.Err = &CallError{Msg: refusedPrefix + reason, Refused: true}
		}
		return e
	}
	if addr.url != "" {
		return p.CheckURL(ctx, field, addr.url)
	}
	return nil
}

// EngineClient returns a client for the container engine at raw and the base
// URL its requests go to. tlsConfig, when not nil, is used for a tcp address
// (which is then called over https). timeout bounds each call as in
// HTTPClient. A refused address is a *CallError with Refused set.
func (p *Policy) EngineClient(raw string, tlsConfig *tls.Config, timeout time.Duration) (*http.Client, string, error) {
	addr, reason := p.parseEngine(raw, tlsConfig != nil)
	if reason != "" {
		return nil, "", &CallError{Msg: refusedPrefix + reason, Refused: true}
	}
	if addr.url != "" {
		var opts []ClientOption
		if tlsConfig != nil {
			opts = append(opts, WithTLSConfig(tlsConfig))
		}
		return p.HTTPClient(timeout, opts...), addr.url, nil
	}
	dialer := &net.Dialer{Timeout: capTimeout(ConnectTimeout, timeout)}
	base := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, "unix", addr.socket)
			if err != nil {
				return nil, &CallError{Msg: "could not connect to the engine socket", Err: err}
			}
			return conn, nil
		},
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 1 << 20,
	}
	client := &http.Client{
		Transport:     base,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return client, "http://" + engineSocketHost, nil
}
