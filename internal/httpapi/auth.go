package httpapi

import (
	"context"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
	echomw "github.com/oapi-codegen/echo-middleware"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/ratelimit"
	"github.com/svcdev/svc/internal/reqbody"
)

// permissionExtension names the permission an operation needs in the contract.
const permissionExtension = "x-svc-permission"

// keyRateLimit bounds the API requests of each key: PerMinute requests in any
// minute (limits.api_requests_per_key_per_minute), 0 for no limit.
type keyRateLimit struct {
	Limiter   *ratelimit.Limiter
	PerMinute int
}

// keyedOperation is what the edge needs to know of an operation to
// authenticate its requests from their headers alone.
type keyedOperation struct {
	// bearer: the contract requires an API key (bearerAuth).
	bearer     bool
	permission string
}

// keyedOperations maps "METHOD /echo/route/:template" to its operation's
// security, for every operation of the contract.
func keyedOperations(doc *openapi3.T) map[string]keyedOperation {
	ops := map[string]keyedOperation{}
	if doc == nil || doc.Paths == nil {
		return ops
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			sec := doc.Security
			if op.Security != nil {
				sec = *op.Security
			}
			perm, _ := op.Extensions[permissionExtension].(string)
			ops[method+" "+echoRoute(path)] = keyedOperation{bearer: requiresKey(sec), permission: perm}
		}
	}
	return ops
}

// requiresKey reports whether every way to satisfy sec names bearerAuth; an
// empty requirement (or none) lets requests through without a key.
func requiresKey(sec openapi3.SecurityRequirements) bool {
	if len(sec) == 0 {
		return false
	}
	for _, req := range sec {
		if _, ok := req["bearerAuth"]; !ok {
			return false
		}
	}
	return true
}

// authenticateFirst authenticates API requests from their headers before
// anything reads their body: it resolves the API key of the operations that
// need one, counts the request against the key's rate limit, enforces the
// operation's x-svc-permission and puts the caller in the request's context.
// A refused request (401, 403, 429) is answered at once, its body unread;
// an accepted one's body is then held to the minimum rate instead of the
// limits of bodies without credentials (package reqbody). Refused requests
// count against the rate limit too: they cost the service as much as allowed
// ones.
//
// Requests for routes the contract does not have, and for operations that
// take no key (accepting an invitation), pass on untouched: the validator
// answers the former without reading the body, and the latter's body stays
// under the unauthenticated limits.
func authenticateFirst(ops map[string]keyedOperation, a *auth.Authenticator, limit keyRateLimit) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			op, ok := ops[req.Method+" "+c.Path()]
			if !ok || !op.bearer || !isGatedAPIPath(req.URL.Path) {
				return next(c)
			}
			token, ok := auth.BearerToken(req.Header.Get("Authorization"))
			if !ok {
				return auth.ErrUnauthenticated
			}
			caller, err := a.Authenticate(req.Context(), token)
			if err != nil {
				return err
			}
			if d := limit.Limiter.Allow(req.Context(), "api:key:"+caller.KeyID, limit.PerMinute, time.Minute); !d.Allowed {
				return apperr.RateLimited("too many requests with this API key; retry after the time in Retry-After", d.RetryAfter)
			}
			if err := auth.Require(caller, op.permission); err != nil {
				return err
			}
			req = req.WithContext(auth.WithCaller(req.Context(), caller))
			reqbody.Authenticate(req)
			c.SetRequest(req)
			return next(c)
		}
	}
}

// authenticated is the validator's authentication hook for operations whose
// contract requires bearerAuth: authenticateFirst has already put the caller
// in the context, so it only confirms that.
func authenticated(ctx context.Context, _ *openapi3filter.AuthenticationInput) error {
	if auth.CallerFrom(echomw.GetEchoContext(ctx).Request().Context()) == nil {
		return auth.ErrUnauthenticated
	}
	return nil
}
