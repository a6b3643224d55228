package console

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/svcdev/svc/internal/environment"
	"github.com/svcdev/svc/internal/environment/template"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
)

// environmentRoutes are the Environments section: the environments svc
// made for runs, and the templates they are made from. Templates are
// disabled rather than deleted, as the API has it.
func (c *Console) environmentRoutes() []route {
	return []route{
		{Method: http.MethodGet, Path: "/environments", Twin: "listEnvironments", Handle: c.environments},
		{Method: http.MethodGet, Path: "/environments/:environment", Twin: "getEnvironment", Handle: c.environment},
		{Method: http.MethodPost, Path: "/environments/:environment/delete", Twin: "deleteEnvironment", Handle: c.deleteEnvironment},
		{Method: http.MethodGet, Path: "/environments/templates", Twin: "listEnvironmentTemplates", Handle: c.templates},
		{Method: http.MethodPost, Path: "/environments/templates", Twin: "createEnvironmentTemplate", Handle: c.createTemplate},
		{Method: http.MethodGet, Path: "/environments/templates/new", Twin: "createEnvironmentTemplate", Handle: c.newTemplate},
		{Method: http.MethodGet, Path: "/environments/templates/:template", Twin: "getEnvironmentTemplate", Handle: c.template},
		{Method: http.MethodPost, Path: "/environments/templates/:template", Twin: "updateEnvironmentTemplate", Handle: c.updateTemplate},
		{Method: http.MethodPost, Path: "/environments/templates/:template/enabled", Twin: "updateEnvironmentTemplate", Handle: c.setTemplateEnabled},
	}
}

// envTab is a tab of the Environments section.
type envTab struct {
	Templates bool
}

// environmentsPage is a page of environments.
type environmentsPage struct {
	envTab
	Items []environment.Environment
	Next  string
	// Template is the template whose environments are listed, nil for all.
	Template *template.Template
	// TemplateNames are the names of the templates on the page, by id.
	TemplateNames map[string]string
}

// environments lists the environments, of one template with ?template= (GET).
func (c *Console) environments(r *wsRequest) error {
	in := environment.ListInput{Cursor: r.cursor()}
	d := &environmentsPage{TemplateNames: map[string]string{}}
	if tid := r.ec.QueryParam("template"); tid != "" {
		t, err := c.svc.Templates.Get(r.ctx(), r.caller, tid)
		if err != nil {
			return err
		}
		in.TemplateID, d.Template = &tid, &t
	}
	page, err := c.svc.Environments.List(r.ctx(), r.caller, in)
	if err != nil {
		return err
	}
	d.Items = page.Items
	for _, e := range page.Items {
		if _, ok := d.TemplateNames[e.TemplateID]; ok {
			continue
		}
		if t, err := c.svc.Templates.Get(r.ctx(), r.caller, e.TemplateID); err == nil {
			d.TemplateNames[e.TemplateID] = t.Name
		}
	}
	d.Next = nextCursor(page.NextCursor)
	return c.renderIn(r, http.StatusOK, "environments", "environments", view{Title: "Environments", Data: d})
}

// environmentPage is one environment.
type environmentPage struct {
	Environment  environment.Environment
	TemplateName string
	// Deletable: the environment is not already being deleted.
	Deletable bool
}

// environment shows an environment (GET).
func (c *Console) environment(r *wsRequest) error {
	e, err := c.svc.Environments.Get(r.ctx(), r.caller, r.ec.Param("environment"))
	if err != nil {
		return err
	}
	return c.renderEnvironment(r, http.StatusOK, e, view{})
}

func (c *Console) renderEnvironment(r *wsRequest, status int, e environment.Environment, v view) error {
	d := &environmentPage{Environment: e, Deletable: e.Status != environment.StatusDeleting && e.Status != environment.StatusDeleted}
	if t, err := c.svc.Templates.Get(r.ctx(), r.caller, e.TemplateID); err == nil {
		d.TemplateName = t.Name
	}
	v.Title, v.Data = "Environment "+e.ID, d
	return c.renderIn(r, status, "environment", "environments", v)
}

// deleteEnvironment asks for an environment's deletion (POST).
func (c *Console) deleteEnvironment(r *wsRequest) error {
	id, etag := r.ec.Param("environment"), r.form.Get("etag")
	if err := c.svc.Environments.Delete(r.ctx(), r.caller, id, &etag); err != nil {
		v := view{}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		e, gerr := c.svc.Environments.Get(r.ctx(), r.caller, id)
		if gerr != nil {
			return gerr
		}
		return c.renderEnvironment(r, status, e, v)
	}
	return r.redirect(r.path("environments", id), "The environment is being deleted: svc destroys it at the vendor shortly.")
}

// templatesPage is a page of environment templates.
type templatesPage struct {
	envTab
	Items []template.Template
	Next  string
	// Providers are the names of the environment providers, by id.
	Providers map[string]string
	// NoProviders: the workspace has no environment provider yet.
	NoProviders bool
}

// templates lists the environment templates (GET).
func (c *Console) templates(r *wsRequest) error {
	page, err := c.svc.Templates.List(r.ctx(), r.caller, template.ListInput{Cursor: r.cursor()})
	if err != nil {
		return err
	}
	prvs, err := c.allProviders(r, catalog.KindEnvironment)
	if err != nil {
		return err
	}
	d := &templatesPage{envTab: envTab{Templates: true}, Items: page.Items, Providers: map[string]string{}, NoProviders: len(prvs) == 0}
	for _, p := range prvs {
		d.Providers[p.ID] = p.Name
	}
	d.Next = nextCursor(page.NextCursor)
	return c.renderIn(r, http.StatusOK, "env_templates", "environments", view{Title: "Environment templates", Data: d})
}

// templateForm is the create page of a template and the edit part of a
// template's page.
type templateForm struct {
	// Providers are the enabled environment providers to pick from (create).
	Providers []provider.Provider
	// Provider is the template's provider; nil until picked.
	Provider *provider.Provider
	TypeName string
	Config   schemaForm
}

// enabledProvider returns the enabled provider id among ps, or nil.
func enabledProvider(ps []provider.Provider, id string) *provider.Provider {
	for i := range ps {
		if ps[i].ID == id && ps[i].Enabled {
			return &ps[i]
		}
	}
	return nil
}

// envSchema is the environment schema of a provider's type, nil when the
// type is not installed.
func (c *Console) envSchema(p *provider.Provider) (map[string]any, string) {
	t, ok := c.svc.Types.Lookup(p.Type)
	if !ok || t.Environment == nil {
		return nil, p.Type
	}
	return t.Environment.Schema.Document(), t.DisplayName
}

// newTemplate shows the provider picker, then the template form (GET ?provider=).
func (c *Console) newTemplate(r *wsRequest) error {
	return c.renderTemplateForm(r, http.StatusOK, view{Form: map[string]string{"enabled": "true", "environment_provider_id": r.ec.QueryParam("provider")}})
}

func (c *Console) renderTemplateForm(r *wsRequest, status int, v view) error {
	prvs, err := c.allProviders(r, catalog.KindEnvironment)
	if err != nil {
		return err
	}
	d := &templateForm{}
	for _, p := range prvs {
		if p.Enabled {
			d.Providers = append(d.Providers, p)
		}
	}
	if d.Provider = enabledProvider(d.Providers, v.Form["environment_provider_id"]); d.Provider != nil {
		var doc map[string]any
		doc, d.TypeName = c.envSchema(d.Provider)
		d.Config = buildSchemaForm(doc, "config", v, false)
	} else if v.Form["environment_provider_id"] != "" && status == http.StatusOK {
		status, v.Error = http.StatusNotFound, "That is not an enabled environment provider of this workspace. Pick one below."
	}
	v.Title, v.Data = "New environment template", d
	return c.renderIn(r, status, "env_template_new", "environments", v)
}

// templateFields reads the form members every template form has.
func templateFields(r *wsRequest, v *view) (name, desc string, stop, del *int, lbls map[string]string) {
	for _, k := range []string{"name", "description", "idle_stop_seconds", "idle_delete_seconds", "labels", "enabled", "environment_provider_id", "etag"} {
		v.Form[k] = r.form.Get(k)
	}
	name, desc = strings.TrimSpace(r.form.Get("name")), strings.TrimSpace(r.form.Get("description"))
	var ok bool
	if stop, ok = formInt(r.form.Get("idle_stop_seconds")); !ok {
		v.Fields["idle_stop_seconds"] = "must be a whole number of seconds"
	}
	if del, ok = formInt(r.form.Get("idle_delete_seconds")); !ok {
		v.Fields["idle_delete_seconds"] = "must be a whole number of seconds"
	}
	lbls, _ = parseLines(r.form.Get("labels"), "labels", v.Fields)
	return name, desc, stop, del, lbls
}

// createTemplate creates a template (POST).
func (c *Console) createTemplate(r *wsRequest) error {
	v := view{Form: map[string]string{}, Fields: map[string]string{}}
	name, desc, stop, del, lbls := templateFields(r, &v)
	enabled := r.form.Get("enabled") == "true"
	in := template.CreateInput{Name: name, Description: desc, ProviderID: r.form.Get("environment_provider_id"),
		IdleStopSeconds: stop, IdleDeleteSeconds: del, Labels: lbls, Enabled: &enabled}
	if p, err := c.svc.Providers.Get(r.ctx(), r.caller, catalog.KindEnvironment, in.ProviderID); err == nil {
		doc, _ := c.envSchema(&p)
		keepSchemaValues(doc, "config", r.form, v.Form)
		in.Config, _ = readSchemaForm(doc, "config", r.form, v.Fields)
	}
	if len(v.Fields) > 0 {
		v.Error = "Check the fields marked below."
		return c.renderTemplateForm(r, http.StatusUnprocessableEntity, v)
	}
	t, err := c.svc.Templates.Create(r.ctx(), r.caller, in)
	if err != nil {
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		foldFields(&v, "labels")
		return c.renderTemplateForm(r, status, v)
	}
	return r.redirect(r.path("environments", "templates", t.ID), "The template "+t.Name+" is created. Agents' configurations name it to run their tools in its environments.")
}

// templatePage is a template with its forms.
type templatePage struct {
	Template     template.Template
	ProviderName string
	templateForm
}

// template shows a template and its edit form (GET).
func (c *Console) template(r *wsRequest) error {
	t, err := c.svc.Templates.Get(r.ctx(), r.caller, r.ec.Param("template"))
	if err != nil {
		return err
	}
	return c.renderTemplate(r, http.StatusOK, t, view{})
}

func (c *Console) renderTemplate(r *wsRequest, status int, t template.Template, v view) error {
	d := &templatePage{Template: t}
	p, err := c.svc.Providers.Get(r.ctx(), r.caller, catalog.KindEnvironment, t.ProviderID)
	if err != nil {
		return err
	}
	d.ProviderName, d.Provider = p.Name, &p
	doc, typeName := c.envSchema(&p)
	d.TypeName = typeName
	if v.Form == nil {
		v.Form = map[string]string{"name": t.Name, "description": t.Description, "etag": t.ETag(), "labels": labelLines(t.Labels)}
		if t.IdleStopSeconds != nil {
			v.Form["idle_stop_seconds"] = strconv.Itoa(int(*t.IdleStopSeconds))
		}
		if t.IdleDeleteSeconds != nil {
			v.Form["idle_delete_seconds"] = strconv.Itoa(int(*t.IdleDeleteSeconds))
		}
		schemaValues(doc, "config", t.Config, v.Form)
	}
	if doc != nil {
		d.Config = buildSchemaForm(doc, "config", v, false)
	}
	v.Title, v.Data = t.Name, d
	return c.renderIn(r, status, "env_template", "environments", v)
}

// labelLines writes labels one per line as "key: value", sorted.
func labelLines(l map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(l)) {
		b.WriteString(k + ": " + l[k] + "\n")
	}
	return b.String()
}

// updateTemplate saves the edit form (POST). Blank thresholds mean never.
func (c *Console) updateTemplate(r *wsRequest) error {
	t, err := c.svc.Templates.Get(r.ctx(), r.caller, r.ec.Param("template"))
	if err != nil {
		return err
	}
	v := view{Form: map[string]string{}, Fields: map[string]string{}}
	name, desc, stop, del, lbls := templateFields(r, &v)
	etag := r.form.Get("etag")
	in := template.UpdateInput{ID: t.ID, IfMatch: &etag, Name: &name, Description: &desc, Labels: lbls,
		IdleStopSeconds: change(stop), IdleDeleteSeconds: change(del)}
	if in.Labels == nil {
		in.Labels = map[string]string{}
	}
	if p, err := c.svc.Providers.Get(r.ctx(), r.caller, catalog.KindEnvironment, t.ProviderID); err == nil {
		if doc, _ := c.envSchema(&p); doc != nil {
			keepSchemaValues(doc, "config", r.form, v.Form)
			in.Config, _ = readSchemaForm(doc, "config", r.form, v.Fields)
		}
	}
	if len(v.Fields) == 0 {
		nt, err := c.svc.Templates.Update(r.ctx(), r.caller, in)
		if err == nil {
			return r.redirect(r.path("environments", "templates", nt.ID), "The template "+nt.Name+" is saved.")
		}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		foldFields(&v, "labels")
		return c.renderTemplate(r, status, t, v)
	}
	v.Error = "Check the fields marked below."
	return c.renderTemplate(r, http.StatusUnprocessableEntity, t, v)
}

// change is a form's optional number as a PATCH member: blank removes.
func change(n *int) provider.Change[int] {
	if n == nil {
		return provider.Remove[int]()
	}
	return provider.Set(*n)
}

// setTemplateEnabled enables or disables a template (POST enabled=true|false).
func (c *Console) setTemplateEnabled(r *wsRequest) error {
	etag := r.form.Get("etag")
	enabled := r.form.Get("enabled") == "true"
	t, err := c.svc.Templates.Update(r.ctx(), r.caller, template.UpdateInput{ID: r.ec.Param("template"), IfMatch: &etag, Enabled: &enabled})
	if err != nil {
		v := view{}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		cur, gerr := c.svc.Templates.Get(r.ctx(), r.caller, r.ec.Param("template"))
		if gerr != nil {
			return gerr
		}
		return c.renderTemplate(r, status, cur, v)
	}
	notice := "The template " + t.Name + " is enabled."
	if !t.Enabled {
		notice = "The template " + t.Name + " is disabled: no new environment is made from it until it is enabled again."
	}
	return r.redirect(r.path("environments", "templates", t.ID), notice)
}
