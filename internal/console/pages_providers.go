package console

import (
	"net/http"
	"strings"

	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/provider/probe"
)

// providerKinds are the provider kinds as the pages name them, with the
// word their API operations carry (listModelProviders...).
var providerKinds = []struct {
	Kind  catalog.Kind
	Label string
	Op    string
	About string
}{
	{catalog.KindModel, "Model", "Model", "Accounts of model vendors: the models of agents run on them."},
	{catalog.KindWeb, "Web", "Web", "Search and fetch services behind the web tools."},
	{catalog.KindEnvironment, "Environment", "Environment", "Where environments run: the sandboxes of agents' tools."},
	{catalog.KindConnector, "Connector", "Connector", "Services that connect agents to people's accounts at other apps."},
	{catalog.KindMemory, "Memory", "Memory", "Vector stores behind record memories."},
}

// kindLabel is the label of kind k.
func kindLabel(k catalog.Kind) string {
	for _, pk := range providerKinds {
		if pk.Kind == k {
			return pk.Label
		}
	}
	return string(k)
}

// providerRoutes are the Providers section: one set of pages per kind,
// each route twinned with its kind's operation (the five collections of
// the API). /providers itself is the model providers' page.
func (c *Console) providerRoutes() []route {
	rs := []route{{Method: http.MethodGet, Path: "/providers", Twin: "listModelProviders", Handle: c.providers(catalog.KindModel)}}
	for _, pk := range providerKinds {
		base, op := "/providers/"+string(pk.Kind), pk.Op
		rs = append(rs,
			route{Method: http.MethodGet, Path: base, Twin: "list" + op + "Providers", Handle: c.providers(pk.Kind)},
			route{Method: http.MethodPost, Path: base, Twin: "create" + op + "Provider", Handle: c.createProvider(pk.Kind)},
			route{Method: http.MethodGet, Path: base + "/new", Twin: "create" + op + "Provider", Handle: c.newProvider(pk.Kind)},
			route{Method: http.MethodGet, Path: base + "/:provider", Twin: "get" + op + "Provider", Handle: c.provider(pk.Kind)},
			route{Method: http.MethodPost, Path: base + "/:provider", Twin: "update" + op + "Provider", Handle: c.updateProvider(pk.Kind)},
			route{Method: http.MethodPost, Path: base + "/:provider/enabled", Twin: "update" + op + "Provider", Handle: c.setProviderEnabled(pk.Kind)},
			route{Method: http.MethodPost, Path: base + "/:provider/test", Twin: "test" + op + "Provider", Handle: c.testProvider(pk.Kind)},
		)
	}
	return rs
}

// providerTab is one kind's tab of the Providers pages.
type providerTab struct {
	Kind   catalog.Kind
	Label  string
	Active bool
}

func providerTabs(k catalog.Kind) []providerTab {
	out := make([]providerTab, 0, len(providerKinds))
	for _, pk := range providerKinds {
		out = append(out, providerTab{pk.Kind, pk.Label, pk.Kind == k})
	}
	return out
}

// providersPage is a kind's list of providers.
type providersPage struct {
	Kind  catalog.Kind
	Label string
	// Noun is the label in running text ("model").
	Noun  string
	About string
	Tabs  []providerTab
	Items []provider.Provider
	Next  string
	// TypeNames are the display names of the installed types, by id.
	TypeNames map[string]string
}

func (c *Console) typeNames(k catalog.Kind) map[string]string {
	out := map[string]string{}
	for _, t := range c.svc.Types.List(k) {
		out[t.ID] = t.DisplayName
	}
	return out
}

// providers lists the providers of kind k (GET).
func (c *Console) providers(k catalog.Kind) func(*wsRequest) error {
	return func(r *wsRequest) error {
		page, err := c.svc.Providers.List(r.ctx(), r.caller, k, nil, r.cursor())
		if err != nil {
			return err
		}
		d := &providersPage{Kind: k, Label: kindLabel(k), Noun: strings.ToLower(kindLabel(k)), Tabs: providerTabs(k), Items: page.Items, TypeNames: c.typeNames(k)}
		for _, pk := range providerKinds {
			if pk.Kind == k {
				d.About = pk.About
			}
		}
		if page.NextCursor != nil {
			d.Next = *page.NextCursor
		}
		return c.renderIn(r, http.StatusOK, "providers", "providers", view{Title: "Providers", Data: d})
	}
}

// providerForm is the create page of a kind: first the type, then the
// type's form.
type providerForm struct {
	Kind  catalog.Kind
	Label string
	Noun  string
	// Types are the installed types of the kind, to pick one.
	Types []catalog.Type
	// Type is the picked type; nil until one is picked.
	Type       *catalog.Type
	Config     schemaForm
	Credential schemaForm
}

// newProvider shows the type picker, then the picked type's form (GET ?type=).
func (c *Console) newProvider(k catalog.Kind) func(*wsRequest) error {
	return func(r *wsRequest) error {
		v := view{Form: map[string]string{}}
		if typ := r.ec.QueryParam("type"); typ != "" {
			t, err := c.svc.Types.Resolve(k, typ)
			if err != nil {
				// No such type of this kind: the picker, saying why.
				formError(&v, err)
				return c.renderProviderForm(r, http.StatusNotFound, k, nil, v)
			}
			v.Form["type"] = t.ID
			return c.renderProviderForm(r, http.StatusOK, k, &t, v)
		}
		return c.renderProviderForm(r, http.StatusOK, k, nil, v)
	}
}

func (c *Console) renderProviderForm(r *wsRequest, status int, k catalog.Kind, t *catalog.Type, v view) error {
	d := &providerForm{Kind: k, Label: kindLabel(k), Noun: strings.ToLower(kindLabel(k)), Types: c.svc.Types.List(k), Type: t}
	if t != nil {
		d.Config = buildSchemaForm(t.Config.Document(), "config", v, false)
		d.Credential = buildSchemaForm(t.Credential.Document(), "credential", v, false)
	}
	v.Title = "New " + d.Noun + " provider"
	v.Data = d
	return c.renderIn(r, status, "provider_new", "providers", v)
}

// createProvider creates a provider from the type's form (POST).
func (c *Console) createProvider(k catalog.Kind) func(*wsRequest) error {
	return func(r *wsRequest) error {
		v := view{Form: map[string]string{"type": r.form.Get("type"), "name": r.form.Get("name")}, Fields: map[string]string{}}
		t, err := c.svc.Types.Resolve(k, r.form.Get("type"))
		if err != nil {
			status, _ := formError(&v, err)
			return c.renderProviderForm(r, status, k, nil, v)
		}
		cfgDoc, credDoc := t.Config.Document(), t.Credential.Document()
		keepSchemaValues(cfgDoc, "config", r.form, v.Form)
		in := provider.CreateInput{Type: t.ID, Name: strings.TrimSpace(r.form.Get("name"))}
		in.Config, _ = readSchemaForm(cfgDoc, "config", r.form, v.Fields)
		if cred, given := readSchemaForm(credDoc, "credential", r.form, v.Fields); given {
			in.Credential = cred
		}
		if k == catalog.KindModel {
			if h, ok := parseLines(r.form.Get("extra_headers"), "extra_headers", v.Fields); ok && len(h) > 0 {
				in.ExtraHeaders = h
			}
		}
		if len(v.Fields) > 0 {
			v.Error = "Check the fields marked below."
			return c.renderProviderForm(r, http.StatusUnprocessableEntity, k, &t, v)
		}
		p, err := c.svc.Providers.Create(r.ctx(), r.caller, k, in)
		if err != nil {
			status, ok := formError(&v, err)
			if !ok {
				return err
			}
			foldFields(&v, "extra_headers")
			if len(v.Fields) > 0 {
				v.Error = "Check the fields marked below. Secrets are not shown again: type them again."
			}
			return c.renderProviderForm(r, status, k, &t, v)
		}
		return r.redirect(r.path("providers", string(k), p.ID), "The provider "+p.Name+" is created. Test it to check that it can reach "+t.DisplayName+".")
	}
}

// foldFields shows the refusals of the members of an input without their
// own input (extra_headers.X-Team) beside the input (extra_headers).
func foldFields(v *view, name string) {
	for f, reason := range v.Fields {
		if rest, ok := strings.CutPrefix(f, name+"."); ok && v.Fields[name] == "" {
			v.Fields[name] = rest + " " + reason
		}
	}
}

// parseLines reads pairs typed one per line as "name: value" (extra
// headers, labels). A line without a colon is refused into fields[field].
func parseLines(s, field string, fields map[string]string) (map[string]string, bool) {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "" {
			fields[field] = `each line must be "name: value"`
			return nil, false
		}
		out[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return out, true
}

// providerPage is a provider with its forms.
type providerPage struct {
	Kind     catalog.Kind
	Label    string
	Provider provider.Provider
	// Type is the provider's installed type; nil when it is no longer
	// installed (its config can then only be read).
	Type       *catalog.Type
	Config     schemaForm
	Credential schemaForm
	// Test is the result of the provider test just sent, nil before.
	Test *probe.Result
	// ExtraHeaders: the kind takes extra headers (model providers).
	ExtraHeaders bool
}

// TestMillis is the test's duration in milliseconds.
func (p *providerPage) TestMillis() int64 {
	if p.Test == nil {
		return 0
	}
	return p.Test.Duration.Milliseconds()
}

// provider shows a provider with its test, enable and edit forms (GET).
func (c *Console) provider(k catalog.Kind) func(*wsRequest) error {
	return func(r *wsRequest) error {
		p, err := c.svc.Providers.Get(r.ctx(), r.caller, k, r.ec.Param("provider"))
		if err != nil {
			return err
		}
		return c.renderProvider(r, http.StatusOK, p, nil, view{})
	}
}

// renderProvider renders the provider page. A v without form values fills
// the edit form with the provider as stored.
func (c *Console) renderProvider(r *wsRequest, status int, p provider.Provider, test *probe.Result, v view) error {
	d := &providerPage{Kind: p.Kind, Label: kindLabel(p.Kind), Provider: p, Test: test, ExtraHeaders: p.Kind == catalog.KindModel}
	if t, ok := c.svc.Types.Lookup(p.Type); ok {
		d.Type = &t
		if v.Form == nil {
			v.Form = map[string]string{"name": p.Name, "etag": p.ETag()}
			schemaValues(t.Config.Document(), "config", p.Config, v.Form)
		}
		d.Config = buildSchemaForm(t.Config.Document(), "config", v, false)
		d.Credential = buildSchemaForm(t.Credential.Document(), "credential", v, p.CredentialConfigured)
	}
	v.Title, v.Data = p.Name, d
	return c.renderIn(r, status, "provider", "providers", v)
}

// updateProvider saves the edit form (POST). Blank secrets keep the stored
// ones; the ETag the page showed guards against overwriting a change made
// since.
func (c *Console) updateProvider(k catalog.Kind) func(*wsRequest) error {
	return func(r *wsRequest) error {
		id := r.ec.Param("provider")
		p, err := c.svc.Providers.Get(r.ctx(), r.caller, k, id)
		if err != nil {
			return err
		}
		t, ok := c.svc.Types.Lookup(p.Type)
		if !ok {
			return c.renderProvider(r, http.StatusConflict, p, nil, view{Error: "The type " + p.Type + " is no longer installed, so this provider cannot be changed."})
		}
		etag := r.form.Get("etag")
		v := view{Form: map[string]string{"name": r.form.Get("name"), "etag": etag}, Fields: map[string]string{}}
		cfgDoc, credDoc := t.Config.Document(), t.Credential.Document()
		keepSchemaValues(cfgDoc, "config", r.form, v.Form)
		name := strings.TrimSpace(r.form.Get("name"))
		in := provider.UpdateInput{ID: id, IfMatch: &etag, Name: &name}
		in.Config, _ = readSchemaForm(cfgDoc, "config", r.form, v.Fields)
		if cred, given := readSchemaForm(credDoc, "credential", r.form, v.Fields); given {
			in.Credential = provider.Set(cred)
		} else if r.form.Get("remove_credential") == "true" {
			in.Credential = provider.Remove[map[string]any]()
		}
		if k == catalog.KindModel {
			if h, ok := parseLines(r.form.Get("extra_headers"), "extra_headers", v.Fields); ok && len(h) > 0 {
				in.ExtraHeaders = provider.Set(h)
			} else if ok && r.form.Get("remove_extra_headers") == "true" {
				in.ExtraHeaders = provider.Remove[map[string]string]()
			}
		}
		if len(v.Fields) == 0 {
			var np provider.Provider
			if np, err = c.svc.Providers.Update(r.ctx(), r.caller, k, in); err == nil {
				return r.redirect(r.path("providers", string(k), np.ID), "The provider "+np.Name+" is saved.")
			}
		}
		status := http.StatusUnprocessableEntity
		if len(v.Fields) > 0 {
			v.Error = "Check the fields marked below."
		} else if s, ok := formError(&v, err); ok {
			status = s
			foldFields(&v, "extra_headers")
			if len(v.Fields) > 0 {
				v.Error = "Check the fields marked below. Secrets are not shown again: type them again."
			}
		} else {
			return err
		}
		return c.renderProvider(r, status, p, nil, v)
	}
}

// setProviderEnabled enables or disables a provider (POST enabled=true|false).
func (c *Console) setProviderEnabled(k catalog.Kind) func(*wsRequest) error {
	return func(r *wsRequest) error {
		id, etag := r.ec.Param("provider"), r.form.Get("etag")
		enabled := r.form.Get("enabled") == "true"
		p, err := c.svc.Providers.Update(r.ctx(), r.caller, k, provider.UpdateInput{ID: id, IfMatch: &etag, Enabled: &enabled})
		if err != nil {
			v := view{}
			status, ok := formError(&v, err)
			if !ok {
				return err
			}
			cur, gerr := c.svc.Providers.Get(r.ctx(), r.caller, k, id)
			if gerr != nil {
				return gerr
			}
			return c.renderProvider(r, status, cur, nil, v)
		}
		notice := "The provider " + p.Name + " is enabled."
		if !p.Enabled {
			notice = "The provider " + p.Name + " is disabled: runs cannot use it until it is enabled again."
		}
		return r.redirect(r.path("providers", string(k), p.ID), notice)
	}
}

// testProvider sends the provider test and shows its result (POST).
func (c *Console) testProvider(k catalog.Kind) func(*wsRequest) error {
	return func(r *wsRequest) error {
		id := r.ec.Param("provider")
		res, err := c.svc.Providers.Test(r.ctx(), r.caller, k, id)
		p, gerr := c.svc.Providers.Get(r.ctx(), r.caller, k, id)
		if gerr != nil {
			return gerr
		}
		if err != nil {
			v := view{}
			status, ok := formError(&v, err)
			if !ok {
				return err
			}
			return c.renderProvider(r, status, p, nil, v)
		}
		return c.renderProvider(r, http.StatusOK, p, &res, view{})
	}
}
