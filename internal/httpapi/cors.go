package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

// CORS headers (the Fetch standard's names).
const (
	headerAllowOrigin   = "Access-Control-Allow-Origin"
	headerAllowMethods  = "Access-Control-Allow-Methods"
	headerAllowHeaders  = "Access-Control-Allow-Headers"
	headerExposeHeaders = "Access-Control-Expose-Headers"
	headerMaxAge        = "Access-Control-Max-Age"
	headerRequestMethod = "Access-Control-Request-Method"
	headerRequestHeader = "Access-Control-Request-Headers"
)

// corsAllowedHeaders are the request headers the API reads, allowed in every
// answered preflight whatever the browser asks for.
var corsAllowedHeaders = []string{"Authorization", "Content-Type", "If-Match", "Idempotency-Key", "Last-Event-ID", "X-Request-Id"}

// corsMaxAge is how long, in seconds, a browser may keep a preflight's
// answer; browsers cap it lower themselves (Chromium at two hours).
const corsMaxAge = 3600

// corsPolicy is server.cors_allowed_origins applied to /api/v1 (see
// docs/decisions/0053-cors.md). Credentials are never allowed: API requests
// carry a bearer key, not cookies, so Access-Control-Allow-Credentials is
// never sent and the console's session cookie is never usable from another
// origin.
type corsPolicy struct {
	origins map[string]bool
	// expose is Access-Control-Expose-Headers: every header the contract
	// documents on API responses, and X-Request-Id.
	expose string
}

func newCORSPolicy(origins []string, doc *openapi3.T) corsPolicy {
	p := corsPolicy{origins: map[string]bool{}, expose: strings.Join(exposedHeaders(doc), ", ")}
	for _, o := range origins {
		p.origins[o] = true
	}
	return p
}

// exposedHeaders lists, sorted, the response headers the contract documents
// on the operations under /api/v1, and X-Request-Id, which every response
// carries.
func exposedHeaders(doc *openapi3.T) []string {
	seen := map[string]bool{echo.HeaderXRequestID: true}
	if doc != nil && doc.Paths != nil {
		for path, item := range doc.Paths.Map() {
			if !strings.HasPrefix(path, "/api/v1/") {
				continue
			}
			for _, op := range item.Operations() {
				if op.Responses == nil {
					continue
				}
				for _, ref := range op.Responses.Map() {
					if ref == nil || ref.Value == nil {
						continue
					}
					for name := range ref.Value.Headers {
						seen[http.CanonicalHeaderKey(name)] = true
					}
				}
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		if n == "Etag" {
			n = "ETag"
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// middleware answers OPTIONS on the API's routes and adds the CORS headers of
// listed origins. It runs before the readiness gate, authentication and the
// validator: a preflight carries no credentials and no body, so it is
// answered from its headers alone, counts against no key's rate limit and
// holds no body slot.
//
// OPTIONS on an API route (one the router knows with other methods) is 204
// with Allow; a preflight from a listed origin also gets
// Access-Control-Allow-Origin (the origin itself), -Allow-Methods (the
// route's), -Allow-Headers, -Max-Age and Vary: Origin. A preflight from any
// other origin gets the bare 204, which a browser takes as a refusal. Every
// other API request from a listed origin gets Access-Control-Allow-Origin and
// -Expose-Headers on its answer, errors included. When origins are listed,
// every API answer varies by Origin, so shared caches keep them apart.
func (p corsPolicy) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if !strings.HasPrefix(req.URL.Path, "/api/v1/") {
			return next(c)
		}
		h := c.Response().Header()
		origin := req.Header.Get(echo.HeaderOrigin)
		listed := origin != "" && p.origins[origin]
		if len(p.origins) > 0 {
			h.Add(echo.HeaderVary, echo.HeaderOrigin)
		}
		if req.Method == http.MethodOptions {
			if allow, ok := c.Get(echo.ContextKeyHeaderAllow).(string); ok && allow != "" {
				h.Set(echo.HeaderAllow, allow)
				if listed && req.Header.Get(headerRequestMethod) != "" {
					h.Set(headerAllowOrigin, origin)
					h.Set(headerAllowMethods, allow)
					h.Set(headerAllowHeaders, strings.Join(allowedHeaders(req.Header.Values(headerRequestHeader)), ", "))
					h.Set(headerMaxAge, strconv.Itoa(corsMaxAge))
				}
				return c.NoContent(http.StatusNoContent)
			}
		}
		if listed {
			h.Set(headerAllowOrigin, origin)
			h.Set(headerExposeHeaders, p.expose)
		}
		return next(c)
	}
}

// allowedHeaders is corsAllowedHeaders and the well-formed names a
// preflight asks for (Access-Control-Request-Headers), without repeats.
func allowedHeaders(requested []string) []string {
	out := slices.Clone(corsAllowedHeaders)
	seen := map[string]bool{}
	for _, n := range out {
		seen[strings.ToLower(n)] = true
	}
	for _, v := range requested {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			if !isToken(name) || seen[strings.ToLower(name)] {
				continue
			}
			seen[strings.ToLower(name)] = true
			out = append(out, name)
		}
	}
	return out
}

// isToken reports whether s is a header name (an RFC 9110 token) of at most
// 64 characters.
func isToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
