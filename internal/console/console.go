// Package console serves the web console: server-rendered pages (html/template,
// embedded) for signing in and out, resetting a password by mail link, and
// accepting an invitation. They set the pattern the rest of the console follows:
//
//   - every page goes through Console.page, which sets the security headers
//     (a Content-Security-Policy that allows no script and no inline style,
//     no framing, no caching), resolves the login session from its cookie
//     against the database, and checks the CSRF token of every POST;
//   - handlers call one service method and render a template, or redirect with
//     303 after a change (post, redirect, get);
//   - forms work without JavaScript, and never echo a password back.
//
// The console must not import internal/httpapi (which registers it): it gets its
// services, built by internal/app, as Deps.
package console

import (
	"errors"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/ratelimit"
	"github.com/svcdev/svc/internal/reqbody"
	"github.com/svcdev/svc/internal/session"
)

// Deps are what the console is built from: services internal/app built.
type Deps struct {
	Log         *slog.Logger
	Sessions    *session.Service
	Invitations *invitation.Service
	// Services are the domain services workspace pages call, the same
	// instances the API calls.
	Services Services
	// Clients tells the client address sign-in and acceptance attempts are
	// counted against.
	Clients *ratelimit.Clients
	// PublicURL is server.public_url: cookies are Secure when it is https.
	PublicURL string
	// MailLinkTTL is how long a mailed link works (auth.mail_link_ttl_seconds),
	// which the page that says one was sent tells.
	MailLinkTTL time.Duration
	// Started reports whether the process finished starting (the database is
	// migrated and checked); until then pages answer 503.
	Started func() bool
}

// Console holds the console's pages and the services behind them.
type Console struct {
	log         *slog.Logger
	sessions    *session.Service
	invitations *invitation.Service
	svc         Services
	publicURL   string
	// wsRoutes are the workspace routes with their permissions resolved.
	wsRoutes []route
	pages    pages
	started  func() bool
	// secure marks cookies Secure: the public URL is https.
	secure      bool
	clients     *ratelimit.Clients
	mailLinkTTL time.Duration
}

// New builds the console. It does not touch the database.
func New(d Deps) (*Console, error) {
	if d.Log == nil || d.Sessions == nil || d.Invitations == nil || d.Clients == nil || d.Started == nil {
		return nil, errors.New("console: log, sessions, invitations, clients and started are required")
	}
	if err := d.Services.check(); err != nil {
		return nil, err
	}
	public, err := url.Parse(d.PublicURL)
	if err != nil {
		return nil, errors.New("console: server.public_url is not a URL")
	}
	pg, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{
		log: d.Log, sessions: d.Sessions, invitations: d.Invitations, svc: d.Services, pages: pg, started: d.Started,
		publicURL: strings.TrimRight(d.PublicURL, "/"),
		secure:    public.Scheme == "https", clients: d.Clients, mailLinkTTL: d.MailLinkTTL,
	}
	if c.wsRoutes, err = resolvePermissions(c.routes()); err != nil {
		return nil, err
	}
	return c, nil
}

// Register adds the console's routes to e.
func (c *Console) Register(e *echo.Echo) {
	e.GET("/", c.page(c.home))
	e.GET("/sign-in", c.page(c.signInForm))
	e.POST("/sign-in", c.page(c.signIn))
	e.POST("/sign-out", c.page(c.signOut))
	e.GET("/password/forgot", c.page(c.forgotForm))
	e.POST("/password/forgot", c.page(c.forgot))
	e.GET("/password/reset", c.page(c.resetForm))
	e.POST("/password/reset", c.page(c.reset))
	e.GET("/invitations/accept", c.page(c.acceptForm))
	e.POST("/invitations/accept", c.page(c.accept))
	e.GET("/invitations/confirm", c.page(c.confirmForm))
	e.POST("/invitations/confirm", c.page(c.confirm))
	e.GET("/console/assets/:name", serveAsset)
	for _, rt := range c.wsRoutes {
		e.Add(rt.Method, workspacePrefix+rt.Path, c.inWorkspace(rt))
	}
	// Any other address of a workspace page's shape is a console page that
	// does not exist; deeper ones are no console address at all.
	notFound := c.page(func(r *request) error { return c.message(r, http.StatusNotFound, msgNoPage) })
	e.Any("/w/*", func(ec echo.Context) error {
		if strings.Count(strings.Trim(ec.Request().URL.Path, "/"), "/") > 5 {
			return echo.ErrNotFound
		}
		return notFound(ec)
	})
}

// request is one page request as the handlers see it.
type request struct {
	ec echo.Context
	// session is the signed-in session, nil when signed out; token is its cookie.
	session *session.Session
	token   string
	// csrf is the token forms must carry.
	csrf string
	// form holds a POST's fields (never the query string's).
	form url.Values
	// parts are an upload's parts after its CSRF token, unread (pageFor).
	parts *multipart.Reader
	// caller is the person acting in the workspace of a workspace page,
	// admitted before the body is read (inWorkspace).
	caller *auth.Caller
}

// page wraps a handler with what every page needs: security headers, the
// startup gate, the session, CSRF and the rendering of failures.
func (c *Console) page(h func(*request) error) echo.HandlerFunc {
	return c.pageFor(h, nil, false)
}

// pageFor is page; with upload, a POST is a multipart/form-data upload whose
// first part is the CSRF token, checked before anything else is read, and
// whose other parts the handler streams from request.parts (readUploadHead).
// pageFor is page with admit, which runs once the session is known and
// before any body is read (so a request that may not be made is refused
// unread) and may answer the request itself (true); upload reads a
// multipart form's head only (readUploadHead).
func (c *Console) pageFor(h func(*request) error, admit func(*request) (bool, error), upload bool) echo.HandlerFunc {
	return func(ec echo.Context) error {
		setSecurityHeaders(ec.Response().Header())
		r := &request{ec: ec}
		if !c.started() {
			return c.message(r, http.StatusServiceUnavailable, msgStarting)
		}
		if err := c.loadSession(r); err != nil {
			return c.fail(r, err)
		}
		if admit != nil {
			handled, err := admit(r)
			if err != nil {
				return c.fail(r, err)
			}
			if handled {
				return nil
			}
		}
		if ec.Request().Method == http.MethodPost {
			if r.session != nil {
				// The session cookie is a checked credential: the form is
				// held to the minimum rate, not to the limits of forms
				// sent signed out (package reqbody).
				reqbody.Authenticate(ec.Request())
			}
			read := c.readForm
			if upload {
				read = c.readUploadHead
			}
			if err := read(r); err != nil {
				if ae, ok := apperr.As(err); ok && ae.Kind == apperr.KindUnavailable {
					// Too many signed-out forms are being read: refused unread.
					ec.Response().Header().Set("Retry-After", strconv.Itoa(ae.RetryAfterSeconds()))
					return c.message(r, http.StatusServiceUnavailable, msgBusy)
				}
				return c.message(r, http.StatusBadRequest, msgBadForm)
			}
			if !c.checkPost(r) {
				return c.message(r, http.StatusForbidden, msgForbidden)
			}
		} else if err := c.ensureCSRF(r); err != nil {
			return c.fail(r, err)
		}
		if err := h(r); err != nil {
			return c.fail(r, err)
		}
		return nil
	}
}

// fail renders an unexpected error: 503 for an unavailable dependency, else
// 500, with the cause in the log under the request id (never in the page).
func (c *Console) fail(r *request, err error) error {
	if r.ec.Response().Committed {
		// The page is out already: the client went away while it was written.
		c.log.Debug("console page not delivered", "route", r.ec.Path(), "error", err.Error())
		return nil
	}
	if apperr.KindOf(err) == apperr.KindUnavailable {
		return c.message(r, http.StatusServiceUnavailable, msgUnavailable)
	}
	c.log.Error("console page failed",
		"route", r.ec.Path(), "request_id", r.ec.Response().Header().Get(echo.HeaderXRequestID), "error", err.Error())
	return c.message(r, http.StatusInternalServerError, msgInternal)
}

// setSecurityHeaders applies what every console response carries: scripts
// and styles from this origin's files only (never inline, never eval),
// requests and streams to this origin only, forms that post only here, no
// framing, no caching of pages that show a person's data or carry tokens, and
// no Referer leaving the origin (reset and invitation URLs hold tokens).
func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set(echo.HeaderCacheControl, "no-store")
}
