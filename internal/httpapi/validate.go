package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
	echomw "github.com/oapi-codegen/echo-middleware"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/resource"
)

func init() {
	// Details are built from SchemaError.Reason and JSONPointer, never from Error(),
	// which would dump the schema to the client.
	openapi3.DefineStringFormatValidator("email", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForEmail))
}

// requestValidator checks every API request against the contract before a handler
// runs: path and query parameters, headers and the body. Failures become 400
// invalid_argument with the offending fields in details, except a change whose
// only fault is a missing If-Match, which is 428 precondition_required.
func requestValidator(spec *openapi3.T, auth openapi3filter.AuthenticationFunc) echo.MiddlewareFunc {
	validate := echomw.OapiRequestValidatorWithOptions(spec, &echomw.Options{
		// The contract's paths are absolute, so the validator needs no prefix (and
		// must not use Options.Prefix: it hands handlers a closed body).
		SilenceServersWarning: true,
		Skipper: func(c echo.Context) bool {
			return !isGatedAPIPath(c.Request().URL.Path)
		},
		Options: openapi3filter.Options{
			MultiError:         true,
			AuthenticationFunc: auth,
		},
		MultiErrorHandler: func(me openapi3.MultiError) *echo.HTTPError {
			return &echo.HTTPError{Code: http.StatusBadRequest, Message: "request is invalid", Internal: me}
		},
		ErrorHandler: func(_ echo.Context, err *echo.HTTPError) error {
			return validationError(err)
		},
	})
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		validated := validate(next)
		return func(c echo.Context) error {
			dropEmptyIfMatch(c.Request())
			return validated(c)
		}
	}
}

// dropEmptyIfMatch removes an If-Match header that holds nothing but spaces. It
// names no precondition, so the request is answered as one without the header
// (428 on a change) rather than as a malformed one.
func dropEmptyIfMatch(r *http.Request) {
	if v, ok := r.Header["If-Match"]; ok && strings.TrimSpace(strings.Join(v, "")) == "" {
		r.Header.Del("If-Match")
	}
}

// validationError maps the validator's error to the service's taxonomy.
func validationError(he *echo.HTTPError) error {
	switch he.Code {
	case http.StatusNotFound:
		return apperr.New(apperr.KindNotFound, "no such route")
	case http.StatusMethodNotAllowed:
		return apperr.New(apperr.KindMethodNotAllowed, "method not allowed on this route")
	}
	var sre *openapi3filter.SecurityRequirementsError
	if errors.As(he.Internal, &sre) {
		for _, e := range sre.Errors {
			if ae, ok := apperr.As(e); ok {
				return ae
			}
		}
		return apperr.Wrap(apperr.KindUnauthenticated, "missing or invalid API key", he.Internal)
	}
	if he.Code >= 500 {
		return apperr.Wrap(apperr.KindInternal, "internal error", he)
	}
	if onlyIfMatchMissing(he.Internal) {
		return apperr.Wrap(apperr.KindPreconditionRequired, resource.IfMatchRequired, he.Internal)
	}
	var details []apperr.Detail
	collectDetails(he.Internal, &details)
	if len(details) == 0 {
		details = append(details, apperr.Detail{Field: "", Reason: "request does not match the API contract"})
	}
	e := apperr.InvalidArgument("request is invalid", details...)
	e.Err = he.Internal
	return e
}

// onlyIfMatchMissing reports whether every fault the validator found is the
// absence of the If-Match header that the contract requires on changes. Such a
// request is answered as the services answer an empty If-Match (428); with
// other faults it is a 400 that names If-Match among them.
func onlyIfMatchMissing(err error) bool {
	errs, ok := err.(openapi3.MultiError)
	if !ok {
		errs = openapi3.MultiError{err}
	}
	for _, e := range errs {
		re, ok := e.(*openapi3filter.RequestError)
		if !ok || re.Parameter == nil || re.Parameter.In != openapi3.ParameterInHeader ||
			http.CanonicalHeaderKey(re.Parameter.Name) != "If-Match" || !errors.Is(re.Err, openapi3filter.ErrInvalidRequired) {
			return false
		}
	}
	return len(errs) > 0
}

// collectDetails flattens the validator's errors into details. kin-openapi nests
// them as MultiError > RequestError > MultiError > SchemaError; the types are
// matched exactly, since errors.As would skip a RequestError (and its parameter
// name) by unwrapping straight to the schema errors inside it.
func collectDetails(err error, out *[]apperr.Detail) {
	switch e := err.(type) {
	case nil:
	case openapi3.MultiError:
		for _, inner := range e {
			collectDetails(inner, out)
		}
	case *openapi3filter.RequestError:
		var field string
		if e.Parameter != nil {
			field = e.Parameter.Name
		}
		switch inner := e.Err.(type) {
		case nil:
			*out = append(*out, apperr.Detail{Field: field, Reason: firstLine(e.Reason)})
		case openapi3.MultiError:
			for _, x := range inner {
				*out = append(*out, schemaDetail(field, x))
			}
		default:
			*out = append(*out, schemaDetail(field, inner))
		}
	default:
		*out = append(*out, schemaDetail("", err))
	}
}

// schemaDetail names the member a schema error is about, as a dotted path.
func schemaDetail(base string, err error) apperr.Detail {
	var se *openapi3.SchemaError
	if !errors.As(err, &se) {
		return apperr.Detail{Field: base, Reason: firstLine(err.Error())}
	}
	path := se.JSONPointer()
	field := strings.Join(path, ".")
	if base != "" && field != "" {
		field = base + "." + field
	} else if base != "" {
		field = base
	}
	// additionalProperties errors name the unknown member only in the reason.
	if prop, ok := unsupportedProperty(se.Reason); ok {
		if field != "" {
			field += "."
		}
		field += prop
		return apperr.Detail{Field: field, Reason: "unknown field"}
	}
	return apperr.Detail{Field: field, Reason: firstLine(se.Reason)}
}

func unsupportedProperty(reason string) (string, bool) {
	const prefix = `property "`
	if !strings.HasPrefix(reason, prefix) || !strings.HasSuffix(reason, `" is unsupported`) {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimPrefix(reason, prefix), `" is unsupported`), true
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
