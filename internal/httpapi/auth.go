package httpapi

import (
	"context"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	echomw "github.com/oapi-codegen/echo-middleware"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/ratelimit"
)

// permissionExtension names the permission an operation needs in the contract.
const permissionExtension = "x-svc-permission"

// keyRateLimit bounds the API requests of each key: PerMinute requests in any
// minute (limits.api_requests_per_key_per_minute), 0 for no limit.
type keyRateLimit struct {
	Limiter   *ratelimit.Limiter
	PerMinute int
}

// authenticate is the validator's authentication hook: it runs for operations
// whose contract requires bearerAuth, resolves the API key, counts the request
// against the key's rate limit, enforces the operation's x-svc-permission and
// puts the caller in the request's context. Refused requests count too: they
// cost the service as much as allowed ones.
func authenticate(a *auth.Authenticator, limit keyRateLimit) openapi3filter.AuthenticationFunc {
	return func(ctx context.Context, in *openapi3filter.AuthenticationInput) error {
		c := echomw.GetEchoContext(ctx)
		req := c.Request()
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
		perm, _ := in.RequestValidationInput.Route.Operation.Extensions[permissionExtension].(string)
		if err := auth.Require(caller, perm); err != nil {
			return err
		}
		c.SetRequest(req.WithContext(auth.WithCaller(req.Context(), caller)))
		return nil
	}
}
