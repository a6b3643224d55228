// Package probe sends the provider test (POST …/{provider_id}/test): one
// inexpensive request with a provider's stored configuration and credential,
// bounded by providers.probe_timeout_seconds, whose outcome is `succeeded`,
// `failed` with a message, or `unsupported` (docs/decisions/0016-provider-tests.md).
//
// What each type sends is declared with the type (catalog.Type.Probe and
// catalog.Type.Request): an authenticated read for model types and the
// connector, one page of a namespace no memory uses for memory types, and a
// ping of the engine for docker. Every call goes through the endpoint policy.
//
// A failure message is fixed text chosen here: it names the HTTP status or the
// kind of network failure, and never carries the credential, an address or any
// part of the vendor's answer.
package probe

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/provider/catalog"
)

// Outcome is the result of a provider test.
type Outcome string

// The outcomes of a provider test.
const (
	Succeeded   Outcome = "succeeded"
	Failed      Outcome = "failed"
	Unsupported Outcome = "unsupported"
)

// NamespacePrefix starts the namespace a memory probe lists. Memory namespaces
// never start with it, so the listed page is of a namespace no memory uses.
const NamespacePrefix = "svc-probe-"

// maxAnswerBytes bounds the part of an answer a probe reads.
const maxAnswerBytes = 1 << 20

// Result is the outcome of one test. Message is empty unless it failed.
type Result struct {
	Outcome  Outcome
	Message  string
	Duration time.Duration
}

// Target is what a probe needs of a provider: its type, its config and its
// opened secrets.
type Target struct {
	Type         catalog.Type
	Config       map[string]any
	Credential   map[string]any    // nil when none is stored
	ExtraHeaders map[string]string // model providers only; nil when none
}

// Prober sends provider tests. It is safe for concurrent use.
type Prober struct {
	policy  *endpoint.Policy
	timeout time.Duration
	client  *http.Client
}

// New returns a prober whose calls follow policy and each take at most timeout.
func New(policy *endpoint.Policy, timeout time.Duration) *Prober {
	return &Prober{policy: policy, timeout: timeout, client: policy.HTTPClient(timeout)}
}

// Probe tests the target. It never returns an error: every failure is a
// Failed result with a message safe to show to the caller.
func (p *Prober) Probe(ctx context.Context, t Target) Result {
	start := time.Now()
	var res Result
	switch t.Type.Probe {
	case catalog.ProbeAuthenticatedRead, catalog.ProbeNamespacePage:
		res = p.httpProbe(ctx, t)
	case catalog.ProbeEnginePing:
		res = p.enginePing(ctx, t)
	default:
		res = Result{Outcome: Unsupported}
	}
	res.Duration = time.Since(start)
	return res
}

// httpProbe sends the type's declared request.
func (p *Prober) httpProbe(ctx context.Context, t Target) Result {
	r := t.Type.Request
	ns := map[string]string{"namespace": NamespacePrefix + strings.TrimPrefix(id.New("x"), "x_")}
	req, err := VendorRequest(ctx, t, http.MethodGet, r.Path, ns)
	switch {
	case errors.Is(err, ErrNoBaseURL):
		return failed("the provider has no base URL configured")
	case err != nil:
		return failed("the configured base URL is not a valid URL")
	}
	if len(r.Query) > 0 {
		vars := templateVars(t, ns)
		q := url.Values{}
		for k, v := range r.Query {
			if v = expand(v, vars, nil); v != "" {
				q.Set(k, v)
			}
		}
		req.URL.RawQuery = q.Encode()
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return callFailed(err, p.timeout)
	}
	defer func() { _ = resp.Body.Close() }()
	if res, done := statusFailure(t.Type, resp.StatusCode, SendsKey(t)); done {
		return res
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return callFailed(err, p.timeout)
	}
	if !answersLike(body, r.Expect) {
		return failed(fmt.Sprintf("the endpoint answered, but not as %s does; check the base URL", t.Type.DisplayName))
	}
	return Result{Outcome: Succeeded}
}

// Errors of VendorRequest.
var (
	// ErrNoBaseURL: the config names no base URL and the type has no fallback.
	ErrNoBaseURL = errors.New("the provider has no base URL configured")
	// ErrBadBaseURL: the base URL does not make a valid request URL.
	ErrBadBaseURL = errors.New("the configured base URL is not a valid URL")
)

// VendorRequest builds a request to the vendor of an HTTP-probed type as the
// probe builds its own, for other code that calls the vendor with a
// provider's stored configuration (the outbox's namespace purge): the URL is
// the type's base URL (the config's Request.Base member, its schema default,
// else Request.Fallback) followed by path; the headers are the target's extra
// headers, then the type's Request.Headers, then the credential's api_key in
// Request.AuthHeader, and Accept: application/json. {name} placeholders in
// path take values from vars, then the config's string members; in path they
// are path-escaped. Send it with a client of the endpoint policy. The type
// must declare a Request.
func VendorRequest(ctx context.Context, t Target, method, path string, vars map[string]string) (*http.Request, error) {
	r := t.Type.Request
	if r == nil {
		return nil, fmt.Errorf("provider type %s declares no HTTP request", t.Type.ID)
	}
	all := templateVars(t, vars)
	base, ok := baseURL(r, all)
	if !ok {
		return nil, ErrNoBaseURL
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(base, "/")+expand(path, all, url.PathEscape), nil)
	if err != nil {
		return nil, ErrBadBaseURL
	}
	// Extra headers first, so that the type's own headers and the credential
	// win over a header of the same name.
	for k, v := range t.ExtraHeaders {
		req.Header.Set(k, v)
	}
	for k, v := range r.Headers {
		if v = expand(v, all, nil); v != "" {
			req.Header.Set(k, v)
		}
	}
	if SendsKey(t) {
		req.Header.Set(r.AuthHeader, r.AuthPrefix+t.Credential["api_key"].(string))
	}
	req.Header.Set("Accept", "application/json")
	return req, nil
}

// SendsKey reports whether requests to the target carry a credential: one is
// stored and the type declares the header it goes in.
func SendsKey(t Target) bool {
	key, ok := t.Credential["api_key"].(string)
	return ok && key != "" && t.Type.Request != nil && t.Type.Request.AuthHeader != ""
}

// templateVars are the values of a request's placeholders: the config's
// string members, their schema defaults when left out, and extra (the
// namespace), which wins.
func templateVars(t Target, extra map[string]string) map[string]string {
	vars := map[string]string{}
	for name, def := range t.Type.Config.Defaults() {
		if s, ok := def.(string); ok {
			vars[name] = s
		}
	}
	for name, v := range t.Config {
		if s, ok := v.(string); ok {
			vars[name] = s
		}
	}
	maps.Copy(vars, extra)
	return vars
}

// baseURL is the config's base member (or its default), else the fallback.
func baseURL(r *catalog.ProbeRequest, vars map[string]string) (string, bool) {
	if v := vars[r.Base]; v != "" {
		return v, true
	}
	if r.Fallback == "" {
		return "", false
	}
	for _, m := range placeholder.FindAllStringSubmatch(r.Fallback, -1) {
		if vars[m[1]] == "" {
			return "", false
		}
	}
	return expand(r.Fallback, vars, url.PathEscape), true
}

// placeholder is a {name} in a probe request's strings.
var placeholder = regexp.MustCompile(`\{([a-z_]+)\}`)

// expand replaces each {name} in s with vars[name], escaped by esc when not
// nil. An unknown name expands to the empty string.
func expand(s string, vars map[string]string, esc func(string) string) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		v := vars[m[1:len(m)-1]]
		if esc != nil {
			v = esc(v)
		}
		return v
	})
}

// statusFailure turns a non-2xx status into a failed result.
func statusFailure(t catalog.Type, status int, hasKey bool) (Result, bool) {
	switch {
	case status >= 200 && status < 300:
		return Result{}, false
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		if !hasKey {
			return failed(fmt.Sprintf("%s requires a credential (HTTP %d); none is stored", t.DisplayName, status)), true
		}
		return failed(fmt.Sprintf("%s refused the credential (HTTP %d)", t.DisplayName, status)), true
	case status == http.StatusBadRequest:
		// Some vendors (Google's APIs) answer a wrong key with 400.
		return failed(fmt.Sprintf("%s refused the request (HTTP 400); check the credential and the configuration", t.DisplayName)), true
	case status == http.StatusNotFound:
		return failed("the endpoint answered HTTP 404 Not Found; check the base URL"), true
	case status == http.StatusTooManyRequests:
		return failed(fmt.Sprintf("%s is rate limiting this credential (HTTP 429); try again later", t.DisplayName)), true
	case status >= 300 && status < 400:
		return failed(fmt.Sprintf("the endpoint redirected (HTTP %d); configure the address it redirects to", status)), true
	case status >= 500:
		return failed(fmt.Sprintf("%s answered HTTP %d, a server error", t.DisplayName, status)), true
	default:
		return failed(fmt.Sprintf("%s answered HTTP %d", t.DisplayName, status)), true
	}
}

// answersLike reports whether body is a JSON document and, when expect is not
// empty, an object with that member.
func answersLike(body []byte, expect string) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	var doc any
	if err := dec.Decode(&doc); err != nil || dec.More() {
		return false
	}
	if expect == "" {
		return true
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return false
	}
	_, ok = obj[expect]
	return ok
}

// DescribeCallError says why an HTTP call to a vendor failed (the endpoint
// policy refused it, it timed out after timeout, TLS failed, ...) in fixed
// text that never carries the cause's details: an address, the credential or
// the vendor's answer. Other code that calls vendors through the endpoint
// policy reports its failures with it.
func DescribeCallError(err error, timeout time.Duration) string {
	return callFailed(err, timeout).Message
}

// callFailed describes a failed call without its cause's details.
func callFailed(err error, timeout time.Duration) Result {
	var ce *endpoint.CallError
	switch {
	case errors.Is(err, endpoint.ErrRefused):
		msg, _ := endpoint.Refusal(err)
		return failed("the call was " + msg)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return failed(fmt.Sprintf("no answer within %s", timeout))
	case isTLS(err):
		return failed("the TLS handshake with the endpoint failed; check its certificate")
	case errors.As(err, &ce):
		return failed(ce.Msg)
	default:
		return failed("the call to the endpoint failed")
	}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

func isTLS(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" {
		return true // the server sent a TLS alert (no or a refused client certificate)
	}
	var (
		verify    *tls.CertificateVerificationError
		alert     tls.AlertError
		header    tls.RecordHeaderError
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &alert) || errors.As(err, &header) ||
		errors.As(err, &authority) || errors.As(err, &hostname) || errors.As(err, &invalid)
}

func failed(msg string) Result { return Result{Outcome: Failed, Message: msg} }
