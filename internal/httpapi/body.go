package httpapi

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/jsonguard"
)

// jsonBody guards API requests before validation and decoding: the client must
// accept JSON (406), a body must be application/json in UTF-8 (415) and within
// the size limit (413), and it must be strict JSON (400): no duplicate keys, no
// trailing data, no NUL, no invalid UTF-8 or lone surrogates, which Go's decoder
// would otherwise let through or PostgreSQL would turn into a 500.
//
// Operations the contract marks x-svc-binary are exempt where their bodies
// are not JSON: an upload's body is streamed by its handler under its own
// limit, and a download's answer has the content's media type, whatever the
// Accept header says.
func jsonBody(limit int64, binary binaryOps) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if !isGatedAPIPath(req.URL.Path) {
				return next(c)
			}
			kind := binary.of(c)
			if kind != binaryResponse && !acceptsJSON(req.Header.Values(echo.HeaderAccept)) {
				return apperr.New(apperr.KindNotAcceptable, "this API answers application/json only")
			}
			if !hasBody(req) || kind == binaryRequest {
				return next(c)
			}
			if err := checkJSONContentType(req.Header.Get(echo.HeaderContentType)); err != nil {
				return err
			}
			if req.ContentLength > limit {
				return tooLarge(limit)
			}
			body, err := io.ReadAll(http.MaxBytesReader(c.Response(), req.Body, limit))
			if err != nil {
				var mbe *http.MaxBytesError
				if errors.As(err, &mbe) {
					return tooLarge(limit)
				}
				if ae, ok := apperr.As(err); ok {
					return ae // the body's own limits (package reqbody): 408, 413, 503
				}
				return apperr.Wrap(apperr.KindInvalidArgument, "could not read the request body", err)
			}
			if err := jsonguard.Check(body); err != nil {
				var je *jsonguard.Error
				if errors.As(err, &je) {
					return apperr.InvalidArgument("request body is not valid JSON", apperr.Detail{Field: je.Field, Reason: je.Reason})
				}
				return apperr.Wrap(apperr.KindInvalidArgument, "request body is not valid JSON", err)
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			req.ContentLength = int64(len(body))
			return next(c)
		}
	}
}

// hasBody reports whether the request carries a body the API reads: only the
// methods whose operations take one (the contract documents 413 and 415 there).
func hasBody(req *http.Request) bool {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return false
	}
	return req.ContentLength != 0 && req.Body != nil && req.Body != http.NoBody
}

func tooLarge(limit int64) error {
	return apperr.New(apperr.KindPayloadTooLarge, "request body exceeds "+strconv.FormatInt(limit, 10)+" bytes")
}

func checkJSONContentType(ct string) error {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return apperr.New(apperr.KindUnsupportedMediaType, "request body must be application/json")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return apperr.New(apperr.KindUnsupportedMediaType, "request body must be UTF-8")
	}
	return nil
}

// acceptsJSON reports whether the Accept header values allow application/json.
// No header means anything is acceptable.
func acceptsJSON(values []string) bool {
	if len(values) == 0 {
		return true
	}
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			if q, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(q, 64); err == nil && f == 0 {
					continue
				}
			}
			if mt == "*/*" || mt == "application/*" || mt == "application/json" {
				return true
			}
		}
	}
	return false
}
