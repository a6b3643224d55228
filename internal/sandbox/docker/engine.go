package docker

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/vendortext"
)

// engine is one engine's client, with the API version its paths carry.
type engine struct {
	client      *http.Client
	base        string
	version     string // "" until negotiated
	callTimeout time.Duration
}

// connect builds the engine client of a provider's configuration and
// credential. The client has no overall time-out (command streams last up to
// an hour); each call is bounded by its context.
func (d *Driver) connect(providerRaw, credRaw []byte) (*engine, providerConfig, error) {
	pc, err := parseProvider(providerRaw)
	if err != nil {
		return nil, pc, err
	}
	cred, err := parseCredential(credRaw)
	if err != nil {
		return nil, pc, err
	}
	tlsConfig, err := engineTLS(cred)
	if err != nil {
		return nil, pc, err
	}
	client, base, err := d.policy.EngineClient(pc.Host, tlsConfig, 0)
	if err != nil {
		return nil, pc, transportError("connect", err)
	}
	return &engine{client: client, base: base, version: pc.APIVersion, callTimeout: d.callTimeout}, pc, nil
}

// close releases the client's idle connections.
func (e *engine) close() { e.client.CloseIdleConnections() }

// engineTLS builds the TLS configuration from the credential: the CA that
// signed the engine's certificate and the client certificate and key. It is
// nil when the credential holds none (the engine is then reached without TLS).
func engineTLS(c credential) (*tls.Config, error) {
	if c.TLSCA == "" && c.TLSCert == "" && c.TLSKey == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.TLSCA != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(c.TLSCA)) {
			return nil, fmt.Errorf("%w: the stored tls_ca holds no PEM certificate", ErrInvalidConfig)
		}
		cfg.RootCAs = pool
	}
	if c.TLSCert != "" || c.TLSKey != "" {
		pair, err := tls.X509KeyPair([]byte(c.TLSCert), []byte(c.TLSKey))
		if err != nil {
			return nil, fmt.Errorf("%w: the stored tls_cert and tls_key are not a matching PEM certificate and key", ErrInvalidConfig)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// negotiate sets the API version when the configuration pins none: the
// engine's own (its /_ping Api-Version header), capped at MaxAPIVersion.
func (e *engine) negotiate(ctx context.Context) error {
	if e.version != "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.callTimeout)
	defer cancel()
	resp, err := e.send(ctx, "ping", http.MethodGet, "/_ping", nil, nil, "")
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return engineError("ping", resp)
	}
	v := resp.Header.Get("Api-Version")
	if !validVersion(v) {
		return &Error{Op: "ping", Status: resp.StatusCode, Message: "the endpoint answered, but not as a container engine does"}
	}
	if compareVersions(v, MinAPIVersion) < 0 {
		return &Error{Op: "ping", Message: fmt.Sprintf("the engine's API version %s is older than %s", v, MinAPIVersion)}
	}
	if compareVersions(v, MaxAPIVersion) > 0 {
		v = MaxAPIVersion
	}
	e.version = v
	return nil
}

// validVersion accepts "1.N".
func validVersion(v string) bool {
	minor, ok := strings.CutPrefix(v, "1.")
	if !ok || minor == "" || len(minor) > 3 {
		return false
	}
	_, err := strconv.Atoi(minor)
	return err == nil && !strings.HasPrefix(minor, "+")
}

// compareVersions compares two valid "1.N" versions.
func compareVersions(a, b string) int {
	x, _ := strconv.Atoi(strings.TrimPrefix(a, "1."))
	y, _ := strconv.Atoi(strings.TrimPrefix(b, "1."))
	return x - y
}

// send makes one request. p is the path below the version prefix; q the
// query; body, when not nil, is sent with contentType.
func (e *engine) send(ctx context.Context, op, method, p string, q url.Values, body io.Reader, contentType string) (*http.Response, error) {
	req, err := e.request(ctx, op, method, p, q, body, contentType)
	if err != nil {
		return nil, err
	}
	return e.do(op, req)
}

// request builds a request as send makes it, for a caller that adds headers.
func (e *engine) request(ctx context.Context, op, method, p string, q url.Values, body io.Reader, contentType string) (*http.Request, error) {
	u := e.base
	if e.version != "" {
		u += "/v" + e.version
	}
	u += p
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, &Error{Op: op, Message: "could not build the request"}
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req, nil
}

// do sends req through the engine's client, whose transport carries the
// endpoint policy's guard.
func (e *engine) do(op string, req *http.Request) (*http.Response, error) {
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, transportError(op, err)
	}
	return resp, nil
}

// call makes a request with a JSON body (nil: none), bounded by the call
// time-out, and decodes a 2xx JSON answer into out (nil: discarded). A
// non-2xx answer is an *Error.
func (e *engine) call(ctx context.Context, op, method, p string, q url.Values, in, out any) (int, error) {
	return e.callWithin(ctx, e.callTimeout, op, method, p, q, in, out)
}

// callWithin is call with its own time-out.
func (e *engine) callWithin(ctx context.Context, timeout time.Duration, op, method, p string, q url.Values, in, out any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	ct := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("envdocker: %s: encode request: %w", op, err)
		}
		body, ct = bytes.NewReader(b), "application/json"
	}
	resp, err := e.send(ctx, op, method, p, q, body, ct)
	if err != nil {
		return 0, err
	}
	defer drain(resp)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, engineError(op, resp)
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxJSONAnswer)).Decode(out); err != nil {
			return resp.StatusCode, &Error{Op: op, Status: resp.StatusCode, Message: "the engine's answer is not the expected JSON"}
		}
	}
	return resp.StatusCode, nil
}

// maxJSONAnswer bounds a JSON answer read from the engine.
const maxJSONAnswer = 4 << 20

// drain discards a little of what is left of a body, so the connection can be
// reused, and closes it.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

// Error is a failed engine call. Its text holds the operation, the HTTP
// status, our words and at most a short, cleaned excerpt of the engine's
// `message` member, never the engine's raw body, a URL or a credential.
type Error struct {
	// Op names the call ("create container", "exec start").
	Op string
	// Status is the engine's HTTP status; 0 for transport failures.
	Status int
	// Message is the explanation.
	Message string
	// cause is a sentinel (sandbox.ErrGone, sandbox.ErrNotFound,
	// endpoint.ErrRefused, a context error), never a transport error whose
	// text could carry a URL.
	cause error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("envdocker: ")
	b.WriteString(e.Op)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": engine answered HTTP %d", e.Status)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap returns the sentinel the error is an instance of, if any.
func (e *Error) Unwrap() error { return e.cause }

// engineError reads an engine's error answer: {"message": "..."}.
func engineError(op string, resp *http.Response) *Error {
	var body struct {
		Message string `json:"message"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := "no explanation"
	if json.Unmarshal(b, &body) == nil && body.Message != "" {
		msg = clean(body.Message)
	}
	return &Error{Op: op, Status: resp.StatusCode, Message: msg}
}

// withCause returns e with a sentinel to match with errors.Is.
func (e *Error) withCause(cause error) *Error {
	e.cause = cause
	return e
}

// transportError turns a failed round trip into an *Error with fixed text:
// the endpoint policy's safe message, a time-out, or a generic failure.
func transportError(op string, err error) *Error {
	var ce *endpoint.CallError
	switch {
	case errors.Is(err, context.Canceled):
		return &Error{Op: op, Message: "cancelled", cause: context.Canceled}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Op: op, Message: "the engine did not answer in time", cause: context.DeadlineExceeded}
	case errors.As(err, &ce):
		out := &Error{Op: op, Message: strings.TrimPrefix(ce.Error(), "endpoint: ")}
		if ce.Refused {
			out.cause = endpoint.ErrRefused
		}
		return out
	default:
		return &Error{Op: op, Message: "could not reach the engine"}
	}
}

// maxMessage bounds the engine text an Error keeps.
const maxMessage = 300

// clean makes an engine message printable and short.
func clean(s string) string { return vendortext.Clean(s, maxMessage) }
