package console

import (
	"net/http"
	"strings"

	"github.com/svcdev/svc/internal/connection"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
)

// connectionRoutes are the Connections section: accounts at other apps,
// reached through connector providers, and the authorizations that
// connect them (a person consents at the vendor's page, then svc files
// the credential).
func (c *Console) connectionRoutes() []route {
	return []route{
		{Method: http.MethodGet, Path: "/connections", Twin: "listConnections", Handle: c.connections},
		{Method: http.MethodPost, Path: "/connections", Twin: "createConnection", Handle: c.createConnection},
		{Method: http.MethodGet, Path: "/connections/new", Twin: "createConnection", Handle: c.newConnection},
		{Method: http.MethodGet, Path: "/connections/:connection", Twin: "getConnection", Handle: c.connection},
		{Method: http.MethodPost, Path: "/connections/:connection", Twin: "updateConnection", Handle: c.updateConnection},
		{Method: http.MethodPost, Path: "/connections/:connection/enabled", Twin: "updateConnection", Handle: c.setConnectionEnabled},
		{Method: http.MethodPost, Path: "/connections/:connection/revoke", Twin: "revokeConnection", Handle: c.revokeConnection},
		{Method: http.MethodPost, Path: "/connections/:connection/authorizations", Twin: "authorizeConnection", Handle: c.authorizeConnection},
		{Method: http.MethodGet, Path: "/connections/:connection/operations/:operation", Twin: "getConnectionOperation", Handle: c.connectionOperation},
	}
}

// connectionsPage is a page of connections.
type connectionsPage struct {
	Items []connection.Connection
	Next  string
	// Providers are the names of the connector providers, by id.
	Providers   map[string]string
	NoProviders bool
}

// connections lists the connections (GET).
func (c *Console) connections(r *wsRequest) error {
	page, err := c.svc.Connections.List(r.ctx(), r.caller, nil, r.cursor())
	if err != nil {
		return err
	}
	prvs, err := c.allProviders(r, catalog.KindConnector)
	if err != nil {
		return err
	}
	d := &connectionsPage{Items: page.Items, Providers: map[string]string{}, NoProviders: len(prvs) == 0}
	for _, p := range prvs {
		d.Providers[p.ID] = p.Name
	}
	d.Next = nextCursor(page.NextCursor)
	return c.renderIn(r, http.StatusOK, "connections", "connections", view{Title: "Connections", Data: d})
}

// connectionForm is the create page and the edit part of a connection's page.
type connectionForm struct {
	// Providers are the enabled connector providers to pick from (create).
	Providers []provider.Provider
	// Provider is the connection's provider; nil until picked.
	Provider   *provider.Provider
	TypeName   string
	Config     schemaForm
	Credential schemaForm
}

// connectorSchemas returns the connection config and credential schemas of
// a connector provider's type; nil when the type is not installed.
func (c *Console) connectorSchemas(p *provider.Provider) (cfg, cred map[string]any, typeName string) {
	t, ok := c.svc.Types.Lookup(p.Type)
	if !ok || t.Connector == nil {
		return nil, nil, p.Type
	}
	return t.Connector.Config.Document(), t.Connector.Credential.Document(), t.DisplayName
}

// newConnection shows the provider picker, then the connection form (GET ?provider=).
func (c *Console) newConnection(r *wsRequest) error {
	return c.renderConnectionForm(r, http.StatusOK, view{Form: map[string]string{"enabled": "true", "provider_id": r.ec.QueryParam("provider")}})
}

func (c *Console) renderConnectionForm(r *wsRequest, status int, v view) error {
	prvs, err := c.allProviders(r, catalog.KindConnector)
	if err != nil {
		return err
	}
	d := &connectionForm{}
	for _, p := range prvs {
		if p.Enabled {
			d.Providers = append(d.Providers, p)
		}
	}
	if d.Provider = enabledProvider(d.Providers, v.Form["provider_id"]); d.Provider != nil {
		cfg, cred, name := c.connectorSchemas(d.Provider)
		d.TypeName = name
		d.Config = buildSchemaForm(cfg, "config", v, false)
		d.Credential = buildSchemaForm(cred, "credential", v, false)
	} else if v.Form["provider_id"] != "" && status == http.StatusOK {
		status, v.Error = http.StatusNotFound, "That is not an enabled connector provider of this workspace. Pick one below."
	}
	v.Title, v.Data = "New connection", d
	return c.renderIn(r, status, "connection_new", "connections", v)
}

// createConnection creates a connection (POST).
func (c *Console) createConnection(r *wsRequest) error {
	v := view{Form: map[string]string{}, Fields: map[string]string{}}
	for _, k := range []string{"provider_id", "app", "name", "account", "enabled"} {
		v.Form[k] = r.form.Get(k)
	}
	enabled := r.form.Get("enabled") == "true"
	in := connection.CreateInput{ProviderID: r.form.Get("provider_id"), App: strings.TrimSpace(r.form.Get("app")),
		Name: strings.TrimSpace(r.form.Get("name")), Enabled: &enabled}
	if a := strings.TrimSpace(r.form.Get("account")); a != "" {
		in.Account = &a
	}
	if p, err := c.svc.Providers.Get(r.ctx(), r.caller, catalog.KindConnector, in.ProviderID); err == nil {
		cfg, cred, _ := c.connectorSchemas(&p)
		keepSchemaValues(cfg, "config", r.form, v.Form)
		in.Config, _ = readSchemaForm(cfg, "config", r.form, v.Fields)
		if m, given := readSchemaForm(cred, "credential", r.form, v.Fields); given {
			in.Credential = m
		}
	}
	if len(v.Fields) > 0 {
		v.Error = "Check the fields marked below."
		return c.renderConnectionForm(r, http.StatusUnprocessableEntity, v)
	}
	conn, err := c.svc.Connections.Create(r.ctx(), r.caller, in)
	if err != nil {
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		if len(v.Fields) > 0 {
			v.Error = "Check the fields marked below. Secrets are not shown again: type them again."
		}
		return c.renderConnectionForm(r, status, v)
	}
	notice := "The connection " + conn.Name + " is created."
	if !conn.CredentialConfigured {
		notice += " Authorize it to connect the account."
	}
	return r.redirect(r.path("connections", conn.ID), notice)
}

// connectionPage is a connection with its forms.
type connectionPage struct {
	Connection connection.Connection
	connectionForm
}

// connection shows a connection and its forms (GET).
func (c *Console) connection(r *wsRequest) error {
	conn, err := c.svc.Connections.Get(r.ctx(), r.caller, r.ec.Param("connection"))
	if err != nil {
		return err
	}
	return c.renderConnection(r, http.StatusOK, conn, view{})
}

func (c *Console) renderConnection(r *wsRequest, status int, conn connection.Connection, v view) error {
	d := &connectionPage{Connection: conn}
	p, err := c.svc.Providers.Get(r.ctx(), r.caller, catalog.KindConnector, conn.ProviderID)
	if err != nil {
		return err
	}
	d.Provider = &p
	cfg, cred, name := c.connectorSchemas(&p)
	d.TypeName = name
	if v.Form == nil {
		v.Form = map[string]string{"name": conn.Name, "etag": conn.ETag()}
		schemaValues(cfg, "config", conn.Config, v.Form)
	}
	if cfg != nil {
		d.Config = buildSchemaForm(cfg, "config", v, false)
		d.Credential = buildSchemaForm(cred, "credential", v, conn.CredentialConfigured)
	}
	v.Title, v.Data = conn.Name, d
	return c.renderIn(r, status, "connection", "connections", v)
}

// updateConnection saves the edit form (POST). A blank credential keeps the
// stored one.
func (c *Console) updateConnection(r *wsRequest) error {
	conn, err := c.svc.Connections.Get(r.ctx(), r.caller, r.ec.Param("connection"))
	if err != nil {
		return err
	}
	etag := r.form.Get("etag")
	v := view{Form: map[string]string{"name": r.form.Get("name"), "etag": etag}, Fields: map[string]string{}}
	name := strings.TrimSpace(r.form.Get("name"))
	in := connection.UpdateInput{ID: conn.ID, IfMatch: &etag, Name: &name}
	if p, err := c.svc.Providers.Get(r.ctx(), r.caller, catalog.KindConnector, conn.ProviderID); err == nil {
		if cfg, cred, _ := c.connectorSchemas(&p); cfg != nil {
			keepSchemaValues(cfg, "config", r.form, v.Form)
			in.Config, _ = readSchemaForm(cfg, "config", r.form, v.Fields)
			if m, given := readSchemaForm(cred, "credential", r.form, v.Fields); given {
				in.Credential = provider.Set(m)
			}
		}
	}
	if len(v.Fields) == 0 {
		nc, err := c.svc.Connections.Update(r.ctx(), r.caller, in)
		if err == nil {
			return r.redirect(r.path("connections", nc.ID), "The connection "+nc.Name+" is saved.")
		}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		if len(v.Fields) > 0 {
			v.Error = "Check the fields marked below. Secrets are not shown again: type them again."
		}
		return c.renderConnection(r, status, conn, v)
	}
	v.Error = "Check the fields marked below."
	return c.renderConnection(r, http.StatusUnprocessableEntity, conn, v)
}

// connectionRefused renders the connection's page with a refusal of one
// of its actions, or returns err when no page can explain it.
func (c *Console) connectionRefused(r *wsRequest, err error) error {
	v := view{}
	status, ok := formError(&v, err)
	if !ok {
		return err
	}
	conn, gerr := c.svc.Connections.Get(r.ctx(), r.caller, r.ec.Param("connection"))
	if gerr != nil {
		return gerr
	}
	return c.renderConnection(r, status, conn, v)
}

// setConnectionEnabled enables or disables a connection (POST enabled=true|false).
func (c *Console) setConnectionEnabled(r *wsRequest) error {
	etag := r.form.Get("etag")
	enabled := r.form.Get("enabled") == "true"
	conn, err := c.svc.Connections.Update(r.ctx(), r.caller, connection.UpdateInput{ID: r.ec.Param("connection"), IfMatch: &etag, Enabled: &enabled})
	if err != nil {
		return c.connectionRefused(r, err)
	}
	notice := "The connection " + conn.Name + " is enabled."
	if !conn.Enabled {
		notice = "The connection " + conn.Name + " is disabled: agents cannot act through it until it is enabled again."
	}
	return r.redirect(r.path("connections", conn.ID), notice)
}

// revokeConnection removes the connection's credential (POST).
func (c *Console) revokeConnection(r *wsRequest) error {
	etag := r.form.Get("etag")
	conn, err := c.svc.Connections.Revoke(r.ctx(), r.caller, r.ec.Param("connection"), &etag)
	if err != nil {
		return c.connectionRefused(r, err)
	}
	return r.redirect(r.path("connections", conn.ID), "The connection "+conn.Name+" is revoked: its credential is removed. Authorize it again to reconnect the account.")
}

// authorizeConnection starts an authorization and sends the person to its
// page, which links to the vendor's consent page (POST).
func (c *Console) authorizeConnection(r *wsRequest) error {
	op, err := c.svc.Connections.Authorize(r.ctx(), r.caller, r.ec.Param("connection"))
	if err != nil {
		return c.connectionRefused(r, err)
	}
	return r.redirect(r.path("connections", op.ConnectionID, "operations", op.ID), "")
}

// operationPage is an authorization of a connection.
type operationPage struct {
	Connection connection.Connection
	Operation  connection.Operation
	// Pending: the operation is not settled, so the page refreshes.
	Pending bool
}

// connectionOperation shows an authorization's status (GET). While it is
// pending the status block refreshes itself (htmx); the page's Refresh
// link does the same without script.
func (c *Console) connectionOperation(r *wsRequest) error {
	conn, err := c.svc.Connections.Get(r.ctx(), r.caller, r.ec.Param("connection"))
	if err != nil {
		return err
	}
	op, err := c.svc.Connections.GetOperation(r.ctx(), r.caller, r.ec.Param("operation"))
	if err != nil {
		return err
	}
	if op.ConnectionID != conn.ID {
		return c.message(r.request, http.StatusNotFound, message{"Not found", "This authorization is not one of this connection's.", r.path("connections", conn.ID), "Go to the connection"})
	}
	d := &operationPage{Connection: conn, Operation: op, Pending: op.Status == connection.StatusPending}
	return c.renderIn(r, http.StatusOK, "connection_operation", "connections", view{Title: "Authorize " + conn.Name, Data: d})
}
