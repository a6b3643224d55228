package console

import (
	"net/http"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/identity"
)

// apiKeyRoutes are the API keys section: every member manages their own
// personal keys (no API twin: keys cannot mint keys, decision 0050); admins
// also see and revoke every key of the workspace, as the API lets them.
func (c *Console) apiKeyRoutes() []route {
	return []route{
		{Method: http.MethodGet, Path: "/api-keys", Permission: auth.PermRead, Handle: c.apiKeys},
		{Method: http.MethodPost, Path: "/api-keys", Permission: auth.PermRead, Handle: c.createAPIKey},
		{Method: http.MethodPost, Path: "/api-keys/:key/revoke", Permission: auth.PermRead, Handle: c.revokeOwnAPIKey},
		{Method: http.MethodGet, Path: "/api-keys/all", Twin: "listAPIKeys", Handle: c.allAPIKeys},
		{Method: http.MethodPost, Path: "/api-keys/all/:key/revoke", Twin: "revokeAPIKey", Handle: c.revokeAnyAPIKey},
	}
}

// apiKeysPage is what the API keys pages show.
type apiKeysPage struct {
	// All: the page lists every key of the workspace (admins).
	All  bool
	Keys []identity.APIKey
	Next string
	// Roles are the roles a new key may have: up to the person's own.
	Roles []string
	// Created is the key just made, with its token, shown once.
	Created *identity.CreatedAPIKey
	// Today is the earliest expiry date the form accepts (tomorrow, UTC).
	Tomorrow string
}

// rolesUpTo lists the workspace roles up to role, lowest first.
func rolesUpTo(role string) []string {
	var out []string
	for _, r := range auth.WorkspaceRoles {
		out = append(out, r)
		if r == role {
			break
		}
	}
	return out
}

func (c *Console) apiKeysView(r *wsRequest, all bool, v view) (view, error) {
	in := identity.PageInput{Cursor: r.cursor()}
	var page identity.Page[identity.APIKey]
	var err error
	if all {
		page, err = c.svc.Identity.ListAPIKeys(r.ctx(), r.caller, in)
	} else {
		page, err = c.svc.Identity.ListPersonalAPIKeys(r.ctx(), r.caller, in)
	}
	if err != nil {
		return v, err
	}
	d, _ := v.Data.(*apiKeysPage)
	if d == nil {
		d = &apiKeysPage{}
	}
	d.All, d.Keys, d.Roles = all, page.Items, rolesUpTo(r.caller.Role)
	d.Tomorrow = time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	d.Next = nextCursor(page.NextCursor)
	v.Data = d
	if v.Title == "" {
		v.Title = "API keys"
	}
	return v, nil
}

// apiKeys lists the person's own keys, with the form to make one (GET).
func (c *Console) apiKeys(r *wsRequest) error {
	v, err := c.apiKeysView(r, false, view{Form: map[string]string{"role": r.caller.Role}})
	if err != nil {
		return err
	}
	return c.renderIn(r, http.StatusOK, "api_keys", "api-keys", v)
}

// allAPIKeys lists every key of the workspace (GET, admins).
func (c *Console) allAPIKeys(r *wsRequest) error {
	v, err := c.apiKeysView(r, true, view{Title: "All API keys"})
	if err != nil {
		return err
	}
	return c.renderIn(r, http.StatusOK, "api_keys", "api-keys", v)
}

// createAPIKey makes a personal key and shows its token once (POST). The
// page is the answer to the POST itself, so the token is never in a URL or
// a later page.
func (c *Console) createAPIKey(r *wsRequest) error {
	form := map[string]string{"name": r.form.Get("name"), "role": r.form.Get("role"), "expires_on": r.form.Get("expires_on")}
	v := view{Form: form, Fields: map[string]string{}}
	in := identity.CreateAPIKeyInput{Name: strings.TrimSpace(form["name"]), Role: form["role"]}
	if day := strings.TrimSpace(form["expires_on"]); day != "" {
		t, err := time.Parse(time.DateOnly, day)
		if err != nil {
			v.Fields["expires_on"] = "must be a date"
		} else {
			// The key works through the whole of that day, UTC.
			end := t.Add(24*time.Hour - time.Second)
			in.ExpiresAt = &end
		}
	}
	var created identity.CreatedAPIKey
	err := error(nil)
	if len(v.Fields) == 0 {
		created, err = c.svc.Identity.CreatePersonalAPIKey(r.ctx(), r.caller, in)
	}
	status := http.StatusOK
	if len(v.Fields) > 0 {
		v.Error, status = "Check the fields marked below.", http.StatusUnprocessableEntity
	} else if err != nil {
		if ae, ok := formError(&v, err); ok {
			status = ae
			if f, ok := v.Fields["expires_at"]; ok {
				v.Fields["expires_on"] = f
			}
		} else {
			return err
		}
	} else {
		v = view{Form: map[string]string{"role": r.caller.Role}, Data: &apiKeysPage{Created: &created}}
		v.Notice = "The key " + created.APIKey.Name + " is made. Copy its token now: it is shown only once."
	}
	v, lerr := c.apiKeysView(r, false, v)
	if lerr != nil {
		return lerr
	}
	return c.renderIn(r, status, "api_keys", "api-keys", v)
}

// revokeOwnAPIKey revokes one of the person's keys (POST).
func (c *Console) revokeOwnAPIKey(r *wsRequest) error {
	return c.revokeKey(r, false)
}

// revokeAnyAPIKey revokes any key of the workspace (POST, admins).
func (c *Console) revokeAnyAPIKey(r *wsRequest) error {
	return c.revokeKey(r, true)
}

func (c *Console) revokeKey(r *wsRequest, all bool) error {
	etag := r.form.Get("etag")
	in := identity.RevokeAPIKeyInput{ID: r.ec.Param("key"), IfMatch: &etag}
	var key identity.APIKey
	var err error
	if all {
		key, err = c.svc.Identity.RevokeAPIKey(r.ctx(), r.caller, in)
	} else {
		key, err = c.svc.Identity.RevokePersonalAPIKey(r.ctx(), r.caller, in)
	}
	back := r.path("api-keys")
	if all {
		back = r.path("api-keys", "all")
	}
	if err != nil {
		v := view{}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		v, lerr := c.apiKeysView(r, all, v)
		if lerr != nil {
			return lerr
		}
		return c.renderIn(r, status, "api_keys", "api-keys", v)
	}
	return r.redirect(back, "The key "+key.Name+" is revoked: requests with it are refused from now on.")
}
