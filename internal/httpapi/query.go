package httpapi

import (
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"github.com/svcdev/svc/internal/apperr"
)

// queryParams maps each contract operation ("METHOD /echo/route") to the
// query parameters it declares (its own and its path's).
type queryParams map[string]map[string]bool

// declaredQueryParams reads the query parameters of every operation of doc.
func declaredQueryParams(doc *openapi3.T) queryParams {
	out := queryParams{}
	if doc == nil || doc.Paths == nil {
		return out
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			names := map[string]bool{}
			for _, params := range []openapi3.Parameters{item.Parameters, op.Parameters} {
				for _, p := range params {
					if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
						names[p.Value.Name] = true
					}
				}
			}
			out[method+" "+echoRoute(path)] = names
		}
	}
	return out
}

// unknownQuery refuses a request to a contract operation that carries a
// query parameter the operation does not declare (400 invalid_argument, one
// detail per unknown name), so a misspelt or unsupported filter is never
// silently ignored. Only the API's own operations are checked: the
// console's pages, the contract and the API page are left alone. It runs
// after authentication, which answers first.
func unknownQuery(declared queryParams) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			known, ok := declared[c.Request().Method+" "+c.Path()]
			if !ok || !isGatedAPIPath(c.Request().URL.Path) {
				return next(c)
			}
			var details []apperr.Detail
			for _, name := range slices.Sorted(maps.Keys(c.QueryParams())) {
				if !known[name] {
					details = append(details, apperr.Detail{Field: shownName(name), Reason: "unknown query parameter"})
				}
			}
			if len(details) > 0 {
				return apperr.InvalidArgument("the request has query parameters this operation does not take", details...)
			}
			return next(c)
		}
	}
}

// shownName is a query parameter's name as an error shows it: at most 64
// bytes, control characters and invalid UTF-8 replaced.
func shownName(name string) string {
	if len(name) > 64 {
		name = name[:64]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(name, "?"))
}
