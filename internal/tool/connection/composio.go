package connection

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/provider/probe"
	"github.com/svcdev/svc/internal/vendortext"
)

// maxAnswerBytes bounds the part of a Composio answer that is read.
const maxAnswerBytes = 16 << 20

// maxVendorMessage bounds, in characters, a message of Composio's that is
// passed on (an action's failure, a refused argument).
const maxVendorMessage = 500

// vendorError is a Composio call that gave no usable answer. msg is our own
// words (with, at most, Composio's cleaned message about the arguments) and
// is safe to show to the model and in logs.
type vendorError struct {
	status    int
	msg       string
	transient bool
}

func (e *vendorError) Error() string { return e.msg }

// call sends one request to Composio with the provider's key and decodes a
// 2xx JSON answer into out. A failure of ctx itself is returned as ctx's
// error; other failures are *vendorError.
func (t *Toolset) call(ctx context.Context, tg target, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode Composio request: %w", err)
		}
		rd = bytes.NewReader(raw)
	}
	cctx, cancel := context.WithTimeout(ctx, t.d.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, method, tg.baseURL+path, rd)
	if err != nil {
		return &vendorError{msg: "the Composio provider's base URL is not a valid URL"}
	}
	req.Header.Set("x-api-key", tg.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := t.d.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return &vendorError{msg: "calling Composio failed: " + probe.DescribeCallError(err, t.d.Timeout), transient: !errors.Is(err, endpoint.ErrRefused)}
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return &vendorError{msg: "reading Composio's answer failed: " + probe.DescribeCallError(err, t.d.Timeout), transient: true}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(resp.StatusCode, raw, tg)
	}
	if len(raw) > maxAnswerBytes {
		return &vendorError{status: resp.StatusCode, msg: fmt.Sprintf("Composio's answer is larger than %d MiB", maxAnswerBytes>>20)}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &vendorError{status: resp.StatusCode, msg: "Composio's answer could not be read; check the provider's base URL"}
	}
	return nil
}

// statusError maps a non-2xx answer to our words. Only a refusal of the
// request (400, 422) carries Composio's own message, cleaned: it says which
// argument was wrong, which the model can act on.
func statusError(status int, body []byte, tg target) *vendorError {
	e := &vendorError{status: status}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.msg = fmt.Sprintf("Composio refused the provider's API key (HTTP %d)", status)
	case status == http.StatusNotFound:
		e.msg = "Composio does not know the action or the connected account (HTTP 404)"
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		e.msg = fmt.Sprintf("Composio refused the request (HTTP %d)", status)
		if m := clean(errorMessage(body), tg); m != "" {
			e.msg += ": " + m
		}
	case status == http.StatusTooManyRequests:
		e.msg, e.transient = "Composio is rate limiting the provider's API key (HTTP 429); try again later", true
	case status >= 500:
		e.msg, e.transient = fmt.Sprintf("Composio answered HTTP %d, a server error; try again later", status), true
	case status >= 300 && status < 400:
		e.msg = fmt.Sprintf("the Composio endpoint redirected (HTTP %d); configure the address it redirects to", status)
	default:
		e.msg = fmt.Sprintf("Composio answered HTTP %d", status)
	}
	return e
}

// errorMessage is error.message of Composio's error shape, or "".
func errorMessage(body []byte) string {
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	return messageOf(v.Error)
}

// messageOf reads an error member: a string, or an object's message.
func messageOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.Message
	}
	return ""
}

// clean makes a message of Composio's safe to pass on: the key and the
// connected account id are taken out, control characters and runs of
// space become one space, and it is cut at maxVendorMessage bytes.
func clean(msg string, tg target) string {
	return vendortext.Clean(msg, maxVendorMessage, tg.key, tg.accountID)
}
