package console

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/svcdev/svc/gen/openapi"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/session"
)

// workspacePrefix is where every page of a workspace lives: /w/{workspace_id}/...
const workspacePrefix = "/w/:ws"

// section is one entry of a workspace's navigation.
type section struct {
	Label string
	// Path is the section's page under the workspace, "runs" for /w/{id}/runs.
	Path string
	// Permission is what a person needs to see the section in the navigation.
	Permission string
}

// sections are the workspace navigation, in order, labelled as people know
// them. Each section's routes are in its own file (pages_<section>.go).
var sections = []section{
	{"Runs", "runs", auth.PermRead},
	{"Agents", "agents", auth.PermRead},
	{"Skills", "skills", auth.PermRead},
	{"Models", "models", auth.PermRead},
	{"Providers", "providers", auth.PermRead},
	{"Connections", "connections", auth.PermRead},
	{"Environments", "environments", auth.PermRead},
	{"Memories", "memories", auth.PermRead},
	{"Assets", "assets", auth.PermRead},
	{"Webhooks", "webhooks", auth.PermAdmin},
	{"Members", "members", auth.PermRead},
	{"API keys", "api-keys", auth.PermRead},
	{"Audit log", "audit", auth.PermAdmin},
}

// route is one page or action of a workspace.
type route struct {
	Method string
	// Path is under /w/{workspace_id}, such as "/runs/:run".
	Path string
	// Twin is the operationId of the API operation the route does or shows:
	// the route requires exactly that operation's x-svc-permission, so the
	// console never lets a person do what their API key could not.
	Twin string
	// Permission is what a route without an API twin requires ("" when it
	// has one).
	Permission string
	// Upload marks a POST sent as multipart/form-data whose parts the
	// handler streams (Console.pageFor).
	Upload bool
	Handle func(*wsRequest) error
}

// routes lists every workspace route, section by section.
func (c *Console) routes() []route {
	var out []route
	for _, rs := range [][]route{
		c.workspaceRoutes(),
		c.apiKeyRoutes(),
		c.agentRoutes(),
		c.skillRoutes(),
		c.runsRoutes(),
		c.providerRoutes(),
		c.modelRoutes(),
		c.environmentRoutes(),
		c.connectionRoutes(),
		c.webhookRoutes(),
		c.memberRoutes(),
		c.auditRoutes(),
		c.memoryRoutes(),
		c.assetRoutes(),
	} {
		out = append(out, rs...)
	}
	return out
}

// workspaceRoutes are the workspace's own pages.
func (c *Console) workspaceRoutes() []route {
	return []route{
		{Method: http.MethodGet, Path: "", Permission: auth.PermRead, Handle: c.workspaceHome},
	}
}

// workspaceHome sends a person to the workspace's first section.
func (c *Console) workspaceHome(r *wsRequest) error {
	return r.ec.Redirect(http.StatusSeeOther, r.path("runs"))
}

// permissions maps each operationId of the contract to its x-svc-permission.
func permissions() (map[string]string, error) {
	doc, err := openapi.Load()
	if err != nil {
		return nil, fmt.Errorf("console: load the contract: %w", err)
	}
	out := map[string]string{}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			perm, _ := op.Extensions["x-svc-permission"].(string)
			out[op.OperationID] = perm
		}
	}
	return out, nil
}

// resolvePermissions fills in each route's Permission from its twin,
// refusing a twin the contract does not have and a route with neither.
func resolvePermissions(rs []route) ([]route, error) {
	perms, err := permissions()
	if err != nil {
		return nil, err
	}
	out := make([]route, len(rs))
	for i, rt := range rs {
		if rt.Twin != "" {
			p, ok := perms[rt.Twin]
			if !ok {
				return nil, fmt.Errorf("console: route %s %s names operation %q, which the contract does not have", rt.Method, rt.Path, rt.Twin)
			}
			rt.Permission = p
		}
		switch rt.Permission {
		case auth.PermRead, auth.PermRun, auth.PermWrite, auth.PermAdmin, auth.PermOrganizationAdmin:
		default:
			return nil, fmt.Errorf("console: route %s %s has no workspace permission (%q)", rt.Method, rt.Path, rt.Permission)
		}
		out[i] = rt
	}
	return out, nil
}

// wsRequest is a request to a workspace page by a signed-in person.
type wsRequest struct {
	*request
	// caller is the person acting in the workspace with their role; services
	// check their permissions against it as they check an API key's.
	caller *auth.Caller
	route  route
}

// ctx is the request's context.
func (r *wsRequest) ctx() context.Context { return r.ec.Request().Context() }

// path is the URL of a page of the workspace: path("runs", id) is
// /w/{workspace}/runs/{id}, each part escaped.
func (r *wsRequest) path(parts ...string) string {
	var b strings.Builder
	b.WriteString("/w/")
	b.WriteString(url.PathEscape(r.caller.WorkspaceID))
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(p))
	}
	return b.String()
}

// cursor is the list position the page asks for (?cursor=), nil for the
// first page.
func (r *wsRequest) cursor() *string {
	if cur := r.ec.QueryParam("cursor"); cur != "" {
		return &cur
	}
	return nil
}

// nextCursor is a list page's link position to the next page, "" on the
// last page.
func nextCursor(next *string) string {
	if next == nil {
		return ""
	}
	return *next
}

// can reports whether the person may do what perm allows here.
func (r *wsRequest) can(perm string) bool { return r.caller.Allows(perm) }

// inWorkspace wraps a workspace route: a signed-out browser is sent to sign
// in (and back), a workspace the person cannot act in is 404 whether or not
// it exists, and a route the person's role does not allow is 403.
func (c *Console) inWorkspace(rt route) echo.HandlerFunc {
	admit := func(r *request) (bool, error) {
		if r.session == nil {
			if r.ec.Request().Method != http.MethodGet {
				return true, c.message(r, http.StatusUnauthorized, msgSignedOut)
			}
			return true, r.ec.Redirect(http.StatusSeeOther, "/sign-in?next="+url.QueryEscape(r.ec.Request().URL.RequestURI()))
		}
		caller, err := c.sessions.Caller(r.ec.Request().Context(), *r.session, r.ec.Param("ws"))
		if errors.Is(err, session.ErrNoWorkspace) {
			return true, c.message(r, http.StatusNotFound, msgNoWorkspace)
		}
		if err != nil {
			return false, err
		}
		if !caller.Allows(rt.Permission) {
			return true, c.message(r, http.StatusForbidden, msgNotAllowed(rt.Permission))
		}
		r.caller = caller
		return false, nil
	}
	return c.pageFor(func(r *request) error {
		wr := &wsRequest{request: r, caller: r.caller, route: rt}
		if err := rt.Handle(wr); err != nil {
			return c.failIn(wr, err)
		}
		return nil
	}, admit, rt.Upload)
}

// failIn renders what a service refused in a workspace page: a missing
// resource is 404, a refused permission 403; anything else is an
// unexpected failure (Console.fail).
func (c *Console) failIn(r *wsRequest, err error) error {
	ae, ok := apperr.As(err)
	switch {
	case ok && ae.Kind == apperr.KindNotFound:
		return c.message(r.request, http.StatusNotFound, message{"Not found", ae.Msg + ". It may have been deleted, or the link is wrong.", r.path(), "Go to the workspace"})
	case ok && ae.Kind == apperr.KindPermissionDenied:
		return c.message(r.request, http.StatusForbidden, message{"Not allowed", ae.Msg + ".", r.path(), "Go to the workspace"})
	}
	return c.fail(r.request, err)
}

// Messages of workspace pages.
var (
	msgSignedOut   = message{"Signed out", "Your session ended. Sign in again, then repeat what you were doing.", "/sign-in", "Sign in"}
	msgNoPage      = message{"Page not found", "There is no console page at this address. Check the link, or start again from your workspaces.", "/", "Go to the start page"}
	msgNoWorkspace = message{"Workspace not found", "There is no workspace here that you can act in. Pick one of yours on the start page.", "/", "Go to the start page"}
)

// msgNotAllowed is the page for a route whose permission the person's role lacks.
func msgNotAllowed(perm string) message {
	return message{"Not allowed", "Your role in this workspace does not have the " + perm + " permission this page needs. Ask a workspace admin.", "/", "Go to the start page"}
}

// nav is what the layout shows of the workspace a page belongs to.
type nav struct {
	caller *auth.Caller
	// Active is the Path of the section the page belongs to.
	Active string
	// Workspaces are the person's workspaces, for the switcher.
	Workspaces []session.Workspace
}

// WorkspaceID, WorkspaceName, OrganizationName and Role describe where the
// person acts.
func (n *nav) WorkspaceID() string      { return n.caller.WorkspaceID }
func (n *nav) WorkspaceName() string    { return n.caller.WorkspaceName }
func (n *nav) OrganizationName() string { return n.caller.OrganizationName }
func (n *nav) Role() string             { return n.caller.Role }

// Sections are the navigation entries the person's role may open.
func (n *nav) Sections() []section {
	out := make([]section, 0, len(sections))
	for _, s := range sections {
		if n.caller.Allows(s.Permission) {
			out = append(out, s)
		}
	}
	return out
}

// renderIn renders a workspace page of section active. Pages are always
// whole: htmx swaps in the part it asked for (hx-select), so every page also
// works as a plain link.
func (c *Console) renderIn(r *wsRequest, status int, page, active string, v view) error {
	n := &nav{caller: r.caller, Active: active}
	ov, err := c.sessions.Overview(r.ctx(), r.caller.PrincipalID)
	if err != nil {
		return err
	}
	for _, o := range ov.Organizations {
		n.Workspaces = append(n.Workspaces, o.Workspaces...)
	}
	v.Nav = n
	return c.render(r.request, status, page, v)
}

// flashCookie carries a notice across a redirect (post, redirect, get).
const flashCookie = "svc_flash"

// redirect answers 303 to path (a change was made), with a notice the next
// page shows once.
func (r *wsRequest) redirect(path, notice string) error {
	if notice != "" {
		ck := &http.Cookie{Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(notice)), Path: "/",
			MaxAge: 60, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.ec.Scheme() == "https"}
		r.ec.SetCookie(ck)
	}
	return r.ec.Redirect(http.StatusSeeOther, path)
}

// takeFlash returns the notice a redirect left, once.
func takeFlash(r *request) string {
	ck, err := r.ec.Cookie(flashCookie)
	if err != nil || ck.Value == "" {
		return ""
	}
	r.ec.SetCookie(&http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	b, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil || len(b) > 500 {
		return ""
	}
	return string(b)
}
