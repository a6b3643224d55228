package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/svcdev/svc/internal/session"
)

var (
	//go:embed templates/*.html
	templateFS embed.FS
	//go:embed assets/console.css
	consoleCSS []byte
)

// pageNames are the templates under templates/, each rendered inside layout.html.
var pageNames = []string{"home", "sign_in", "forgot", "forgot_sent", "reset", "accept", "accept_sent", "confirm", "message"}

// pages maps a page name to its template (the layout with the page's content).
type pages map[string]*template.Template

// funcs are the helpers templates may call.
var funcs = template.FuncMap{
	"date": func(t time.Time) string { return t.UTC().Format("2 January 2006, 15:04 UTC") },
}

func parsePages() (pages, error) {
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console: parse layout: %w", err)
	}
	out := pages{}
	for _, name := range pageNames {
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: parse page %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// view is what a page template sees.
type view struct {
	Title   string
	Session *session.Session // nil when signed out
	CSRF    string
	Notice  string
	Error   string
	// Form holds values to fill the form with again; never a password.
	Form map[string]string
	// Fields holds a message per refused field.
	Fields map[string]string
	// Data is the page's own data.
	Data any
}

// render writes page with status. The template runs into a buffer first, so a
// template failure is a clean 500 rather than half a page.
func (c *Console) render(r *request, status int, page string, v view) error {
	v.Session, v.CSRF = r.session, r.csrf
	var buf bytes.Buffer
	if err := c.pages[page].ExecuteTemplate(&buf, "layout", v); err != nil {
		if page == "message" {
			return fmt.Errorf("render %s: %w", page, err) // nothing left to render with
		}
		return c.fail(r, fmt.Errorf("render %s: %w", page, err))
	}
	return r.ec.HTMLBlob(status, buf.Bytes())
}

// message is the content of a page that only says something.
type message struct {
	Title    string
	Message  string
	LinkURL  string
	LinkText string
}

// Messages of the console's pages.
var (
	msgStarting    = message{"Starting", "svc is starting. Try again in a few seconds.", "", ""}
	msgUnavailable = message{"Unavailable", "A service svc depends on is unavailable. Try again in a moment.", "", ""}
	msgBusy        = message{"Busy", "svc is receiving too many forms at this moment. Try again in a moment.", "", ""}
	msgInternal    = message{"Something went wrong", "An unexpected error stopped this page. Try again; if it keeps happening, tell your operator the time it happened.", "/", "Go to the start page"}
	msgBadForm     = message{"The form could not be read", "Your browser sent a form this page does not understand. Go back, reload the page and try again.", "/", "Go to the start page"}
	msgForbidden   = message{"The form has expired", "This form was not sent from a page this service gave you just now, so it was refused. Go back, reload the page and try again.", "/", "Go to the start page"}
)

// message renders a message page with status.
func (c *Console) message(r *request, status int, m message) error {
	return c.render(r, status, "message", view{Title: m.Title, Data: m})
}

// rateLimited re-renders a form with 429 and Retry-After.
func (c *Console) rateLimited(r *request, page string, v view, seconds int) error {
	r.ec.Response().Header().Set("Retry-After", strconv.Itoa(seconds))
	v.Error = fmt.Sprintf("Too many attempts. Wait %s and try again.", plural(seconds, "second"))
	return c.render(r, http.StatusTooManyRequests, page, v)
}

// assets are the files under /console/assets/, by name.
var assets = map[string]struct {
	body        []byte
	contentType string
	etag        string
}{
	"console.css": {consoleCSS, "text/css; charset=utf-8", etagOf(consoleCSS)},
}

func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// asset serves an embedded file. It is revalidated on every use (ETag), so a
// new build's stylesheet applies at once.
func asset(ec echo.Context) error {
	h := ec.Response().Header()
	setSecurityHeaders(h)
	a, ok := assets[ec.Param("name")]
	if !ok {
		return echo.ErrNotFound
	}
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set("ETag", a.etag)
	for _, v := range ec.Request().Header.Values("If-None-Match") {
		for _, tag := range strings.Split(v, ",") {
			if t := strings.TrimSpace(tag); t == "*" || strings.TrimPrefix(t, "W/") == a.etag {
				return ec.NoContent(http.StatusNotModified)
			}
		}
	}
	return ec.Blob(http.StatusOK, a.contentType, a.body)
}

// plural writes n with its noun, "1 second" or "5 seconds".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
