package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/session"
)

var (
	//go:embed templates/*.html
	templateFS embed.FS
	//go:embed assets/console.css
	consoleCSS []byte
	//go:embed assets/console.js
	consoleJS []byte
	// htmx 2.0.11 (0BSD, assets/htmx.LICENSE), vendored by scripts/vendor-htmx.sh.
	//go:embed assets/htmx.min.js
	htmxJS []byte
	//go:embed assets/favicon.svg
	favicon []byte
)

// funcs are the helpers templates may call.
var funcs = template.FuncMap{
	"date": func(t time.Time) string { return t.UTC().Format("2 January 2006, 15:04 UTC") },
	// stamp is a time to the second, for lists and timelines.
	"stamp": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	// field is the message for a refused field of the page's form, or "".
	"field": func(v view, name string) string { return v.Fields[name] },
	// value is what the page's form held in a field, to fill it in again.
	"value": func(v view, name string) string { return v.Form[name] },
	// pager links to the page of a list after cursor next ("" for none),
	// keeping the page's other query parameters.
	"pager": func(v view, next string) pagerLink {
		if next == "" || v.URL == nil {
			return pagerLink{}
		}
		q := v.URL.Query()
		q.Set("cursor", next)
		return pagerLink{Next: v.URL.Path + "?" + q.Encode()}
	},
	// empty is an empty list's message, with a link to what to do next.
	"empty": func(text, linkURL, linkText string) emptyList { return emptyList{text, linkURL, linkText} },
	// pretty indents a JSON document for reading; anything else is shown as it is.
	"pretty": prettyJSON,
	// approvalOf is what the approval partial needs: the page, a pending
	// call, the run whose page shows it and where a decision goes back to.
	"approvalOf": func(v view, a run.Approval, runID, back string) approvalPart {
		return approvalPart{V: v, A: a, RunID: runID, Back: back}
	},
}

type approvalPart struct {
	V     view
	A     run.Approval
	RunID string
	Back  string
}

type pagerLink struct{ Next string }

type emptyList struct{ Text, LinkURL, LinkText string }

// prettyJSON indents a JSON document (bytes, string or json.RawMessage)
// or encodes a value; the template escapes the result.
func prettyJSON(v any) string {
	var raw []byte
	switch x := v.(type) {
	case []byte:
		raw = x
	case json.RawMessage:
		raw = x
	case string:
		raw = []byte(x)
	default:
		b, err := json.MarshalIndent(x, "", "  ")
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// pages maps a page name to its template (the layout with the page's
// content). Every file under templates/ is a page named after it, except
// layout.html and the partials (names starting with "_"), which every page
// can use.
type pages map[string]*template.Template

func parsePages() (pages, error) {
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/_*.html")
	if err != nil {
		return nil, fmt.Errorf("console: parse layout: %w", err)
	}
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := pages{}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" || strings.HasPrefix(name, "_") {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, f)
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
	// Nav is the workspace the page belongs to, nil outside workspaces.
	Nav *nav
	// URL is the page's own address (for links that keep its query).
	URL *url.URL
	// Base is the service's public URL (server.public_url), for examples
	// people copy.
	Base string
}

// Can reports whether the person may do what perm allows in the page's
// workspace: actions they may not take are left out of the page.
func (v view) Can(perm string) bool { return v.Nav != nil && v.Nav.caller.Allows(perm) }

// Path is the URL of a page of the workspace, each part escaped:
// {{.Path "runs" .Data.ID}} is /w/{workspace}/runs/{id}.
func (v view) Path(parts ...string) string {
	if v.Nav == nil {
		return "/"
	}
	b := "/w/" + url.PathEscape(v.Nav.caller.WorkspaceID)
	for _, p := range parts {
		b += "/" + url.PathEscape(p)
	}
	return b
}

// render writes page with status. The template runs into a buffer first, so a
// template failure is a clean 500 rather than half a page.
func (c *Console) render(r *request, status int, page string, v view) error {
	v.Session, v.CSRF, v.URL, v.Base = r.session, r.csrf, r.ec.Request().URL, c.publicURL
	if v.Notice == "" {
		v.Notice = takeFlash(r)
	}
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
	"console.js":  {consoleJS, "text/javascript; charset=utf-8", etagOf(consoleJS)},
	"htmx.min.js": {htmxJS, "text/javascript; charset=utf-8", etagOf(htmxJS)},
	"favicon.svg": {favicon, "image/svg+xml", etagOf(favicon)},
}

func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// serveAsset serves an embedded file. It is revalidated on every use (ETag), so a
// new build's stylesheet applies at once.
func serveAsset(ec echo.Context) error {
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
