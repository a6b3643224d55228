package hosted

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/sandbox"
)

// Error is a failed call to a vendor. Its text is the vendor, the operation,
// the HTTP status and our own words: never the credential, a header's value,
// a URL with its query or the vendor's body.
type Error struct {
	Vendor string // type id, "e2b"
	Op     string // what was being done, "create sandbox"
	Status int    // HTTP status; 0 when the call itself failed
	Msg    string // our explanation
	kind   error  // sentinel for errors.Is: sandbox.ErrGone, endpoint.ErrRefused...
}

// Error returns the sanitised text: vendor, operation, status, our words.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "envhosted: %s: %s", e.Vendor, e.Op)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	return b.String()
}

// Unwrap returns the sentinel the error is an instance of, if any.
func (e *Error) Unwrap() error { return e.kind }

// statusError describes a vendor's non-success answer by its status alone.
func statusError(vendor, op string, status int) *Error {
	e := &Error{Vendor: vendor, Op: op, Status: status}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Msg = "the vendor refused the credential"
	case status == http.StatusNotFound:
		e.Msg, e.kind = "not found", sandbox.ErrNotFound
	case status == http.StatusConflict:
		e.Msg = "conflict with the instance's state"
	case status == http.StatusTooManyRequests:
		e.Msg = "rate limited by the vendor"
	case status >= 500:
		e.Msg = "the vendor failed"
	default:
		e.Msg = "the vendor refused the request"
	}
	return e
}

// callError describes a call that got no answer, in fixed words: the
// transport's own error text can carry the URL and its query.
func callError(ctx context.Context, vendor, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("envhosted: %s: %s: %w", vendor, op, ctxErr)
	}
	e := &Error{Vendor: vendor, Op: op}
	var ce *endpoint.CallError
	var t interface{ Timeout() bool }
	switch {
	case errors.Is(err, endpoint.ErrRefused):
		e.Msg, _ = endpoint.Refusal(err)
		e.kind = endpoint.ErrRefused
	case errors.As(err, &t) && t.Timeout():
		e.Msg = "no answer in time"
	case errors.As(err, &ce):
		e.Msg = ce.Msg
	default:
		e.Msg = "the call failed"
	}
	return e
}

// hasStatus reports whether err is a vendor answer with the given status.
func hasStatus(err error, status int) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == status
}

// gone turns a 404 of the instance into sandbox.ErrGone.
func gone(err error) error {
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusNotFound {
		return &Error{Vendor: e.Vendor, Op: e.Op, Status: e.Status, Msg: "the instance no longer exists", kind: sandbox.ErrGone}
	}
	return err
}

// goneError is an instance the vendor reports ended.
func goneError(vendor, op, state string) error {
	return &Error{Vendor: vendor, Op: op, Msg: fmt.Sprintf("the instance is %s", state), kind: sandbox.ErrGone}
}

// configError is a provider, credential, template or handle the driver
// cannot use.
func configError(vendor, what string) error {
	return fmt.Errorf("envhosted: %s: %s", vendor, what)
}
