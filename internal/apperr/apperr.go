// Package apperr is the service's one error taxonomy. Domain code returns *Error
// values built by the constructors here; the HTTP layer maps them to a status and
// the documented error body in one place. Nothing here imports HTTP.
package apperr

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies an error by what the caller can do about it.
type Kind uint8

// The kinds, each with its wire code and HTTP status in the HTTP layer.
const (
	KindInternal             Kind = iota // internal 500: a bug or an unexpected failure
	KindInvalidArgument                  // invalid_argument 400
	KindUnauthenticated                  // unauthenticated 401
	KindPermissionDenied                 // permission_denied 403
	KindNotFound                         // not_found 404
	KindMethodNotAllowed                 // method_not_allowed 405
	KindNotAcceptable                    // not_acceptable 406
	KindAlreadyExists                    // already_exists 409
	KindConflict                         // conflict 409: the state does not allow it
	KindDisabled                         // disabled 409: the resource is disabled
	KindPreconditionFailed               // precondition_failed 412: stale If-Match
	KindRequestTimeout                   // request_timeout 408: the body did not arrive in time
	KindPayloadTooLarge                  // payload_too_large 413
	KindUnsupportedMediaType             // unsupported_media_type 415
	KindRangeNotSatisfiable              // range_not_satisfiable 416: a byte range past the end
	KindPreconditionRequired             // precondition_required 428: If-Match missing
	KindRateLimited                      // rate_limited 429
	KindUnavailable                      // unavailable 503
)

var codes = [...]string{
	KindInternal:             "internal",
	KindInvalidArgument:      "invalid_argument",
	KindUnauthenticated:      "unauthenticated",
	KindPermissionDenied:     "permission_denied",
	KindNotFound:             "not_found",
	KindMethodNotAllowed:     "method_not_allowed",
	KindNotAcceptable:        "not_acceptable",
	KindAlreadyExists:        "already_exists",
	KindConflict:             "conflict",
	KindDisabled:             "disabled",
	KindPreconditionFailed:   "precondition_failed",
	KindRequestTimeout:       "request_timeout",
	KindPayloadTooLarge:      "payload_too_large",
	KindUnsupportedMediaType: "unsupported_media_type",
	KindRangeNotSatisfiable:  "range_not_satisfiable",
	KindPreconditionRequired: "precondition_required",
	KindRateLimited:          "rate_limited",
	KindUnavailable:          "unavailable",
}

// Code is the kind's wire code, as listed in the ErrorCode schema of the contract.
func (k Kind) Code() string {
	if int(k) < len(codes) {
		return codes[k]
	}
	return codes[KindInternal]
}

func (k Kind) String() string { return k.Code() }

// Detail names one offending input: a dotted field path and why it was refused.
type Detail struct {
	Field  string
	Reason string
}

// Error is an error a client may see. Msg and Details are shown to clients; Err is
// the cause, kept for logs and errors.Is, and never shown.
type Error struct {
	Kind    Kind
	Msg     string
	Details []Detail
	Err     error
	// RetryAfter, when positive, tells the client how long to wait before
	// trying again (the Retry-After header of a rate_limited answer).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Kind.Code(), e.Msg, e.Err)
	}
	return e.Kind.Code() + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// New builds an error of the given kind with a client-facing message.
func New(kind Kind, msg string) *Error { return &Error{Kind: kind, Msg: msg} }

// Wrap builds an error of the given kind that keeps cause for logs.
func Wrap(kind Kind, msg string, cause error) *Error { return &Error{Kind: kind, Msg: msg, Err: cause} }

// InvalidArgument reports refused input; details name the fields.
func InvalidArgument(msg string, details ...Detail) *Error {
	return &Error{Kind: KindInvalidArgument, Msg: msg, Details: details}
}

// InvalidField reports one refused field.
func InvalidField(field, reason string) *Error {
	return InvalidArgument("request is invalid", Detail{Field: field, Reason: reason})
}

// NotFound reports that a resource does not exist in the caller's workspace. Ids of
// other workspaces get exactly this error, so they cannot be told apart from absent ones.
func NotFound(resource string) *Error { return New(KindNotFound, resource+" not found") }

// NotFoundField reports that what a request field refers to does not exist in
// the caller's workspace: a 404 with msg whose detail names the field and says
// why, as InvalidField does for a refused value.
func NotFoundField(msg, field, reason string) *Error {
	return &Error{Kind: KindNotFound, Msg: msg, Details: []Detail{{Field: field, Reason: reason}}}
}

// RateLimited reports that the caller exceeded a rate limit and may try again
// after retryAfter.
func RateLimited(msg string, retryAfter time.Duration) *Error {
	return &Error{Kind: KindRateLimited, Msg: msg, RetryAfter: retryAfter}
}

// RetryAfterSeconds is e's RetryAfter as the whole seconds of a Retry-After
// header: rounded up, and at least 1 for a rate_limited error. 0 means none.
func (e *Error) RetryAfterSeconds() int {
	if e.RetryAfter <= 0 {
		if e.Kind == KindRateLimited {
			return 1
		}
		return 0
	}
	return int((e.RetryAfter + time.Second - 1) / time.Second)
}

// Unavailable reports a dependency that is down or a process that is not ready.
func Unavailable(msg string, cause error) *Error { return Wrap(KindUnavailable, msg, cause) }

// KindOf returns the kind of err, or KindInternal when err is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// As returns err's *Error, if it has one.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
