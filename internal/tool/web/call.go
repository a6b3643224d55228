package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/endpoint"
)

// maxAnswerBytes bounds the part of a vendor's answer that is read.
const maxAnswerBytes = 16 << 20

// Error is a failed vendor call. Message is our own words (it never holds
// the credential, a URL or the vendor's text) and is safe to show to the
// model and in logs.
type Error struct {
	// StatusCode is the vendor's HTTP status; 0 for a network failure or an
	// answer we could not read.
	StatusCode int
	// Message says what went wrong, naming the vendor.
	Message string
	// Retryable says the same call may succeed later (429, 5xx, network).
	Retryable bool
	// cause is a sentinel (endpoint.ErrRefused) or nil; never a transport
	// error, whose text carries the URL.
	cause error
	// retryAfter is the vendor's Retry-After, 0 when it sent none.
	retryAfter time.Duration
}

// Error returns the message, prefixed with the package name.
func (e *Error) Error() string { return "webtool: " + e.Message }

// Unwrap returns the sentinel the error is an instance of, if any.
func (e *Error) Unwrap() error { return e.cause }

// request is one vendor call.
type request struct {
	method string
	// url is the whole URL; it may carry the key in its query (google_cse,
	// serpapi), so it never appears in an error.
	url    string
	header map[string]string
	body   any // sent as JSON when not nil
}

// call sends r, retrying once on 429 or 5xx, and decodes a 2xx JSON answer
// into out. status maps the vendor's own non-2xx answers that mean something
// particular (nil for none); it gets the body and returns "" to fall back to
// the common mapping.
func (c *Client) call(ctx context.Context, r request, out any, status func(code int, body []byte) string) error {
	var payload []byte
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return fmt.Errorf("webtool: encode %s request: %w", c.typ.ID, err)
		}
		payload = b
	}
	for attempt := 1; ; attempt++ {
		body, err := c.once(ctx, r, payload, status)
		if err == nil {
			if jerr := json.Unmarshal(body, out); jerr != nil {
				return &Error{Message: fmt.Sprintf("%s answered with something other than its JSON", c.typ.DisplayName)}
			}
			return nil
		}
		var e *Error
		if !errors.As(err, &e) || attempt == 2 || e.StatusCode == 0 || !e.Retryable {
			return err
		}
		wait := c.retryWait
		if e.retryAfter > 0 {
			if e.retryAfter > c.maxRetryAfter {
				return err
			}
			wait = e.retryAfter
		}
		if serr := sleep(ctx, wait); serr != nil {
			return fmt.Errorf("webtool: %s: waiting to retry: %w", c.typ.ID, serr)
		}
	}
}

// once sends one request and returns the body of a 2xx answer.
func (c *Client) once(ctx context.Context, r request, payload []byte, status func(int, []byte) string) ([]byte, error) {
	actx, cancel := context.WithTimeout(ctx, c.attemptTimeout)
	defer cancel()
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(actx, r.method, r.url, rd)
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("the %s provider's configured URL is not valid", c.typ.DisplayName)}
	}
	req.Header.Set("Accept", "application/json")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.netError(ctx, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, c.netError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := c.statusError(resp.StatusCode, body, status)
		e.retryAfter = retryAfter(resp.Header.Get("Retry-After"))
		return nil, e
	}
	if len(body) > maxAnswerBytes {
		return nil, &Error{Message: fmt.Sprintf("%s's answer is larger than %d MiB", c.typ.DisplayName, maxAnswerBytes>>20)}
	}
	return body, nil
}

// statusError maps a non-2xx answer to our words.
func (c *Client) statusError(code int, body []byte, status func(int, []byte) string) *Error {
	name := c.typ.DisplayName
	e := &Error{StatusCode: code}
	if status != nil {
		e.Message = status(code, body)
	}
	switch {
	case e.Message != "":
	case (code == http.StatusUnauthorized || code == http.StatusForbidden) && c.key == "" && !c.typ.CredentialRequired:
		e.Message = fmt.Sprintf("%s refused the request (HTTP %d); it may require access settings svc cannot send", name, code)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		e.Message = fmt.Sprintf("%s refused the credential (HTTP %d)", name, code)
	case code == http.StatusPaymentRequired:
		e.Message = fmt.Sprintf("%s refused the request: the account's credits or plan are exhausted (HTTP 402)", name)
	case code == http.StatusTooManyRequests:
		e.Message = fmt.Sprintf("%s rate limited the request (HTTP 429); try again later", name)
	case code >= 500:
		e.Message = fmt.Sprintf("%s is unavailable (HTTP %d); try again later", name, code)
	case code == http.StatusNotFound:
		e.Message = fmt.Sprintf("%s answered HTTP 404; check the provider's base URL", name)
	default:
		e.Message = fmt.Sprintf("%s rejected the request (HTTP %d)", name, code)
	}
	e.Retryable = code == http.StatusTooManyRequests || code >= 500
	return e
}

// netError turns a transport failure into an *Error, or returns ctx's error
// when the caller gave up.
func (c *Client) netError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("webtool: %s: %w", c.typ.ID, context.Cause(ctx))
	}
	name := c.typ.DisplayName
	var ce *endpoint.CallError
	var ne net.Error
	switch {
	case errors.Is(err, endpoint.ErrRefused):
		msg, _ := endpoint.Refusal(err)
		return &Error{Message: fmt.Sprintf("the call to %s was %s", name, msg), cause: endpoint.ErrRefused}
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return &Error{Message: fmt.Sprintf("%s did not answer in time", name), Retryable: true}
	case errors.As(err, &ce):
		// A CallError's message is fixed text without addresses.
		return &Error{Message: fmt.Sprintf("could not reach %s: %s", name, ce.Msg), Retryable: true}
	default:
		return &Error{Message: fmt.Sprintf("could not reach %s", name), Retryable: true}
	}
}

// retryAfter reads Retry-After in seconds or as an HTTP date; 0 when absent.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(s, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
