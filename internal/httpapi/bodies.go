package httpapi

import (
	"github.com/labstack/echo/v4"

	"github.com/svcdev/svc/internal/ratelimit"
	"github.com/svcdev/svc/internal/reqbody"
)

// guardBodies wraps the body of every request, API and console alike, in
// the limits of package reqbody: until a later middleware authenticates the
// request from its headers, the body is small, short-lived and counted
// against limits.unauthenticated_bodies. An answer written while the body
// is still unread closes the connection: Go's server would otherwise read
// (up to 256 KiB of) the rest of the body before sending the answer, so a
// refusal would wait for a client that may never send it.
func guardBodies(g *reqbody.Guard, clients *ratelimit.Clients) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			res := c.Response()
			var client string
			if clients != nil {
				client = clients.Addr(c.Request())
			}
			b := g.Wrap(res.Writer, c.Request(), client)
			if b == nil {
				return next(c)
			}
			defer b.Close()
			res.Before(func() {
				if reqbody.Unread(b) {
					res.Header().Set(echo.HeaderConnection, "close")
				}
			})
			return next(c)
		}
	}
}
