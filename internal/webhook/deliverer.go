package webhook

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/buildinfo"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/subscription"
)

// Time-outs of one webhook attempt, unless options say otherwise; the
// process takes the first two from outbox.webhook_connect_timeout_seconds and
// outbox.webhook_response_timeout_seconds.
const (
	// DefaultConnectTimeout bounds connecting to the endpoint.
	DefaultConnectTimeout = 3 * time.Second
	// DefaultResponseTimeout bounds the wait for the first byte of the
	// endpoint's answer, from the start of the attempt.
	DefaultResponseTimeout = 10 * time.Second
	// DefaultTimeout bounds the whole attempt: connecting, the TLS
	// handshake, sending, the endpoint's answer and reading its snippet.
	DefaultTimeout = 15 * time.Second
)

// UserAgent names svc to receivers.
var UserAgent = "svc-webhooks/" + buildinfo.Version

// Reasons a delivery is cancelled rather than sent.
const (
	ReasonSubscriptionDeleted  = "subscription deleted"
	ReasonSubscriptionDisabled = "subscription disabled"
)

// Option configures a Deliverer.
type Option func(*options)

type options struct {
	connectTimeout  time.Duration
	responseTimeout time.Duration
	timeout         time.Duration
	cacheTTL        time.Duration
}

// WithConnectTimeout bounds connecting to an endpoint (DefaultConnectTimeout).
func WithConnectTimeout(d time.Duration) Option {
	return func(o *options) { o.connectTimeout = d }
}

// WithResponseTimeout bounds the wait for the first byte of an endpoint's
// answer, counted from the start of the attempt (DefaultResponseTimeout); the
// whole attempt's time-out still caps it when shorter.
func WithResponseTimeout(d time.Duration) Option {
	return func(o *options) { o.responseTimeout = d }
}

// WithTimeout bounds a whole attempt (DefaultTimeout).
func WithTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

// WithSubscriptionCache keeps what a delivery needs of its subscription (url,
// enabled flag, opened secret) in memory for up to ttl, saving a database
// read per delivery. The price is staleness: for up to ttl after a change, a
// delivery may still go to the old url, be signed with the rotated-out
// secret, or reach a subscription just disabled or deleted. Off (zero) by
// default; see docs/decisions/0022-webhooks.md for the measured gain.
func WithSubscriptionCache(ttl time.Duration) Option {
	return func(o *options) { o.cacheTTL = ttl }
}

// Deliverer sends webhook deliveries; it is the outbox.Deliverer of kind
// webhook. It is safe for concurrent use; build one per process and reuse it
// (it holds the connection pool to receivers).
type Deliverer struct {
	pool    *pgxpool.Pool
	q       *db.Queries
	ring    *keyring.Ring
	client  *http.Client
	timeout time.Duration
	// firstByte bounds the wait for the answer's first byte (≤ timeout).
	firstByte time.Duration
	cache     *subscriptionCache // nil: none
}

var _ outbox.Deliverer = (*Deliverer)(nil)

// NewDeliverer returns a deliverer that reads subscriptions from pool, opens
// their secrets with ring and calls endpoints through policy's guarded client
// (no proxy, connect-time address checks, redirects not followed).
func NewDeliverer(pool *pgxpool.Pool, ring *keyring.Ring, policy *endpoint.Policy, opts ...Option) *Deliverer {
	o := options{connectTimeout: DefaultConnectTimeout, responseTimeout: DefaultResponseTimeout, timeout: DefaultTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if o.responseTimeout <= 0 || o.responseTimeout > o.timeout {
		o.responseTimeout = o.timeout
	}
	client := policy.HTTPClient(o.timeout, endpoint.FollowRedirects(false), endpoint.WithConnectTimeout(o.connectTimeout))
	return &Deliverer{
		pool: pool, q: db.New(), ring: ring, client: client, timeout: o.timeout, firstByte: o.responseTimeout,
		cache: newSubscriptionCache(o.cacheTTL),
	}
}

// Close closes the idle connections to receivers.
func (d *Deliverer) Close() { d.client.CloseIdleConnections() }

// Deliver makes one attempt at a claimed webhook delivery: it reads the
// subscription as it is now, signs the payload with a timestamp of this
// attempt and POSTs it. The outcome carries the status code and a snippet of
// the answer. Its errors never hold the secret, an address or the receiver's
// words beyond the snippet.
func (d *Deliverer) Deliver(ctx context.Context, c outbox.Claimed) outbox.Outcome {
	tgt, err := d.target(ctx, c)
	switch {
	case err != nil && ctx.Err() != nil:
		return outbox.Failed(ctx.Err())
	case dbx.IsNotFound(err):
		return outbox.Cancelled(ReasonSubscriptionDeleted)
	case errors.Is(err, subscription.ErrSecretUnreadable):
		return outbox.Failed(&safeError{msg: "the signing secret cannot be opened", cause: err})
	case err != nil:
		return outbox.Failed(&safeError{msg: "could not read the subscription", cause: err})
	case !tgt.enabled:
		return outbox.Cancelled(ReasonSubscriptionDisabled)
	}
	at := c.ClaimedAt
	if at.IsZero() {
		at = time.Now()
	}
	signed, err := Sign(tgt.secret, c.ID, at, c.Payload)
	if err != nil {
		return outbox.Failed(&safeError{msg: "the signing secret cannot be used", cause: err})
	}
	out := d.post(ctx, tgt.url, signed, c.Payload)
	if out.StatusCode == http.StatusGone && out.Err != nil {
		d.cache.forget(c.WorkspaceID, c.SubscriptionID)
		return d.gone(ctx, c, tgt.url, out)
	}
	return out
}

// target is what a delivery needs of its subscription: where, whether, and
// the opened signing secret.
type target struct {
	url     string
	enabled bool
	secret  string
}

// target reads the subscription of c, from the cache when one is configured
// and holds it. A deleted subscription is pgx.ErrNoRows.
func (d *Deliverer) target(ctx context.Context, c outbox.Claimed) (target, error) {
	if t, ok := d.cache.get(c.WorkspaceID, c.SubscriptionID); ok {
		return t, nil
	}
	sub, err := d.q.WebhookSubscriptionForDelivery(ctx, d.pool, db.WebhookSubscriptionForDeliveryParams{WorkspaceID: c.WorkspaceID, ID: c.SubscriptionID})
	if err != nil {
		return target{}, err
	}
	t := target{url: sub.Url, enabled: sub.Enabled}
	if sub.Enabled {
		if t.secret, err = subscription.OpenStoredSecret(d.ring, sub.ID, sub.Secret); err != nil {
			return target{}, err
		}
	}
	d.cache.put(c.WorkspaceID, c.SubscriptionID, t)
	return t, nil
}

// gone handles a 410 Gone: the subscription is disabled and the delivery is
// dead. When the subscription could not be disabled (the database failed),
// or was not (its url changed since it was read, or it is disabled already),
// the attempt is an ordinary failure: the next one meets the 410 again, is
// sent to the new url, or is cancelled.
func (d *Deliverer) gone(ctx context.Context, c outbox.Claimed, url string, out outbox.Outcome) outbox.Outcome {
	disabled, err := d.disable(ctx, c, url)
	switch {
	case err != nil:
		out.Err = &safeError{msg: "the endpoint answered 410 Gone; disabling the subscription failed", cause: err}
	case disabled:
		out.Err = &safeError{msg: "the endpoint answered 410 Gone; the subscription was disabled"}
		out.Permanent = true
	}
	return out
}

// post sends one signed request and judges the answer.
func (d *Deliverer) post(ctx context.Context, url string, s Signed, body []byte) outbox.Outcome {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return outbox.Failed(&safeError{msg: "the subscription's url cannot be requested", cause: err})
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(HeaderID, s.ID)
	req.Header.Set(HeaderTimestamp, s.Timestamp)
	req.Header.Set(HeaderSignature, s.Signature)
	resp, err := d.do(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return outbox.Failed(ctx.Err())
		}
		return outbox.Failed(d.describe(err))
	}
	snippet, readErr := readSnippet(resp.Body)
	_ = resp.Body.Close()
	out := judge(resp.StatusCode)
	out.StatusCode, out.Response = resp.StatusCode, snippet
	if out.Err == nil && readErr != nil && ctx.Err() != nil {
		// Stopped while reading a successful answer: given back, not charged.
		return outbox.Failed(ctx.Err())
	}
	return out
}

// errNoAnswer ends a request whose endpoint did not start its answer within
// the deliverer's first-byte time-out.
var errNoAnswer = errors.New("no answer within the response time-out")

// do sends req, ended with errNoAnswer when the answer's first byte (the
// response headers) has not come within d.firstByte. Once it has, the rest
// of the answer has what is left of the whole attempt's time-out.
func (d *Deliverer) do(ctx context.Context, req *http.Request) (*http.Response, error) {
	rctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(d.firstByte, func() { cancel(errNoAnswer) })
	resp, err := d.client.Do(req.WithContext(rctx))
	if !timer.Stop() && err == nil {
		// The timer fired as the answer came: too late to use it.
		cancel(nil)
		_ = resp.Body.Close()
		return nil, errNoAnswer
	}
	if err != nil {
		cancel(nil)
		if errors.Is(context.Cause(rctx), errNoAnswer) && ctx.Err() == nil {
			return nil, errNoAnswer
		}
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: func() { cancel(nil) }}
	return resp, nil
}

// cancelOnClose releases a request's context when its answer is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// judge maps a status code to an outcome: only 2xx is delivered.
func judge(code int) outbox.Outcome {
	switch {
	case code >= 200 && code <= 299:
		return outbox.Delivered()
	case code == http.StatusGone:
		return outbox.Failed(&safeError{msg: "the endpoint answered 410 Gone"})
	case code >= 300 && code <= 399:
		return outbox.Failed(&safeError{msg: fmt.Sprintf("the endpoint answered %d; redirects are not followed", code)})
	default:
		return outbox.Failed(&safeError{msg: fmt.Sprintf("the endpoint answered %d", code)})
	}
}

// describe turns a failed request into an error that names what went wrong
// in fixed words: the endpoint policy's refusals say why (they never carry
// an address), other failures say only their class.
func (d *Deliverer) describe(err error) error {
	var ce *endpoint.CallError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var ne interface{ Timeout() bool }
	switch {
	case errors.Is(err, errNoAnswer):
		return &safeError{msg: fmt.Sprintf("the endpoint did not answer within %s", d.firstByte), cause: err}
	case errors.As(err, &ce) && ce.Refused:
		return &safeError{msg: refusal(ce.Msg), cause: err}
	case errors.As(err, &ne) && ne.Timeout():
		return &safeError{msg: fmt.Sprintf("the endpoint did not answer within %s", d.timeout), cause: err}
	case errors.As(err, &ce):
		return &safeError{msg: ce.Msg, cause: err}
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid):
		return &safeError{msg: "the endpoint's TLS certificate is not valid", cause: err}
	default:
		return &safeError{msg: "the request to the endpoint failed", cause: err}
	}
}

// refusal words an endpoint policy refusal: "refused by the endpoint
// policy: must be an https URL (set endpoint_policy.allow_http = true to
// allow plain http)", naming the key that would allow the call; a refused
// redirect gets the same prefix.
func refusal(msg string) string {
	if strings.HasPrefix(msg, "refused by the endpoint policy") {
		return msg
	}
	return "refused by the endpoint policy: " + msg
}

// readSnippet reads at most outbox.ResponseSnippetBytes of an answer and
// returns them as valid UTF-8 text that PostgreSQL accepts.
func readSnippet(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, outbox.ResponseSnippetBytes))
	return outbox.Snippet(b), err
}

// disable disables the subscription whose endpoint (url) answered 410 Gone,
// with an audit event of no actor (the service did it), in one transaction.
// It reports false, changing nothing, when the subscription is disabled
// already, was deleted, or its url changed meanwhile.
func (d *Deliverer) disable(ctx context.Context, c outbox.Claimed, url string) (bool, error) {
	return dbx.WithTxV(ctx, d.pool, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		row, err := d.q.WebhookSubscriptionDisable(ctx, tx, db.WebhookSubscriptionDisableParams{WorkspaceID: c.WorkspaceID, ID: c.SubscriptionID, Url: url})
		if dbx.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("disable subscription %s: %w", c.SubscriptionID, err)
		}
		err = audit.Record(ctx, tx, audit.Event{
			OrganizationID: row.OrganizationID, WorkspaceID: c.WorkspaceID,
			Action: "subscription.disabled", SubjectType: "subscription", SubjectID: row.ID,
			Version: &row.Version, ChangedFields: []string{"enabled"},
		})
		if err != nil {
			return false, fmt.Errorf("audit subscription %s disabled: %w", c.SubscriptionID, err)
		}
		return true, nil
	})
}

// safeError is an attempt's failure as admins see it: msg is fixed text;
// cause, for logs and errors.Is, is never shown.
type safeError struct {
	msg   string
	cause error
}

func (e *safeError) Error() string { return e.msg }
func (e *safeError) Unwrap() error { return e.cause }
