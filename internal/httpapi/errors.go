package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/svcdev/svc/internal/apperr"
)

// statuses maps each error kind to its HTTP status: the one place that does.
var statuses = map[apperr.Kind]int{
	apperr.KindInternal:             http.StatusInternalServerError,
	apperr.KindInvalidArgument:      http.StatusBadRequest,
	apperr.KindUnauthenticated:      http.StatusUnauthorized,
	apperr.KindPermissionDenied:     http.StatusForbidden,
	apperr.KindNotFound:             http.StatusNotFound,
	apperr.KindMethodNotAllowed:     http.StatusMethodNotAllowed,
	apperr.KindNotAcceptable:        http.StatusNotAcceptable,
	apperr.KindAlreadyExists:        http.StatusConflict,
	apperr.KindConflict:             http.StatusConflict,
	apperr.KindDisabled:             http.StatusConflict,
	apperr.KindPreconditionFailed:   http.StatusPreconditionFailed,
	apperr.KindRequestTimeout:       http.StatusRequestTimeout,
	apperr.KindPayloadTooLarge:      http.StatusRequestEntityTooLarge,
	apperr.KindUnsupportedMediaType: http.StatusUnsupportedMediaType,
	apperr.KindRangeNotSatisfiable:  http.StatusRequestedRangeNotSatisfiable,
	apperr.KindPreconditionRequired: http.StatusPreconditionRequired,
	apperr.KindRateLimited:          http.StatusTooManyRequests,
	apperr.KindUnavailable:          http.StatusServiceUnavailable,
}

// errorBody is the documented Error schema.
type errorBody struct {
	Error errorPayload `json:"error"`
}

type errorPayload struct {
	Code      string        `json:"code"`
	Message   string        `json:"message"`
	RequestID string        `json:"request_id"`
	Details   []errorDetail `json:"details"`
}

type errorDetail struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// causeKey keeps the error a request failed with, for its log record.
const causeKey = "svc.cause"

// toAppError classifies any error a handler or middleware returned.
func toAppError(err error) *apperr.Error {
	if ae, ok := apperr.As(err); ok {
		return ae
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return apperr.New(apperr.KindNotFound, "no such route")
		case http.StatusMethodNotAllowed:
			return apperr.New(apperr.KindMethodNotAllowed, "method not allowed on this route")
		case http.StatusRequestEntityTooLarge:
			return apperr.New(apperr.KindPayloadTooLarge, "request body is too large")
		case http.StatusUnsupportedMediaType:
			return apperr.New(apperr.KindUnsupportedMediaType, "request body must be application/json")
		case http.StatusBadRequest:
			if ute, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
				return unmarshalTypeError(ute, err)
			}
			// Echo's own binding errors; their messages are short and safe.
			if msg, ok := he.Message.(string); ok {
				return apperr.Wrap(apperr.KindInvalidArgument, msg, err)
			}
			return apperr.Wrap(apperr.KindInvalidArgument, "request is invalid", err)
		}
	}
	return apperr.Wrap(apperr.KindInternal, "internal error", err)
}

// unmarshalTypeError is a body member the contract's validator accepted but
// the handler's type cannot hold: a number such as 1e2 or 100.0 where an
// integer is declared (JSON Schema counts them as integers, Go's decoder does
// not), or a number too large for it. The detail names the member.
func unmarshalTypeError(ute *json.UnmarshalTypeError, cause error) *apperr.Error {
	reason := "must be a " + ute.Type.String()
	switch ute.Type.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		reason = "must be an integer written in digits, without a fraction or an exponent, and within range"
	}
	e := apperr.InvalidArgument("request is invalid", apperr.Detail{Field: ute.Field, Reason: reason})
	e.Err = cause
	return e
}

// errorHandler writes every error in the documented shape with the request's id.
// Causes are never sent to clients; internal ones go to the request's log record.
func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		ae := toAppError(err)
		c.Set(causeKey, err)
		body := errorBodyOf(ae, c.Response().Header().Get(echo.HeaderXRequestID))
		if s := ae.RetryAfterSeconds(); s > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(s))
		}
		// A 405 names the route's methods (RFC 9110), whichever middleware
		// refused the request: the router found them.
		if ae.Kind == apperr.KindMethodNotAllowed {
			if allow, ok := c.Get(echo.ContextKeyHeaderAllow).(string); ok && allow != "" {
				c.Response().Header().Set(echo.HeaderAllow, allow)
			}
		}
		if err := writeJSON(c, statuses[ae.Kind], body); err != nil {
			log.Warn("write error response", "request_id", body.Error.RequestID, "error", err.Error())
		}
	}
}

// errorBodyOf is the documented body of ae; internal causes are never shown.
func errorBodyOf(ae *apperr.Error, requestID string) errorBody {
	msg := ae.Msg
	if ae.Kind == apperr.KindInternal {
		msg = "internal error"
	}
	body := errorBody{Error: errorPayload{Code: ae.Kind.Code(), Message: msg, RequestID: requestID}}
	for _, d := range ae.Details {
		body.Error.Details = append(body.Error.Details, errorDetail(d))
	}
	return body
}

// writeErrorBody writes ae as the error handler does, for the few responses
// that carry an error body and headers of their own (a 416's Content-Range).
func writeErrorBody(w http.ResponseWriter, ae *apperr.Error, requestID string) error {
	b, err := json.Marshal(errorBodyOf(ae, requestID))
	if err != nil {
		return err
	}
	w.Header().Set(echo.HeaderContentType, "application/json; charset=utf-8")
	w.WriteHeader(statuses[ae.Kind])
	_, err = w.Write(b)
	return err
}

// writeJSON writes v with the documented JSON content type; HEAD gets no body.
func writeJSON(c echo.Context, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/json; charset=utf-8")
	c.Response().WriteHeader(status)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	_, err = c.Response().Write(b)
	return err
}
