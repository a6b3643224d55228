package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/model"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/resource"
)

// modelRoutes are the Models section: the workspace's models, each a
// vendor model on a model provider and one of its type's APIs, with
// settings from that API's schema.
func (c *Console) modelRoutes() []route {
	return []route{
		{Method: http.MethodGet, Path: "/models", Twin: "listModels", Handle: c.models},
		{Method: http.MethodPost, Path: "/models", Twin: "createModel", Handle: c.createModel},
		{Method: http.MethodGet, Path: "/models/new", Twin: "createModel", Handle: c.newModel},
		{Method: http.MethodGet, Path: "/models/:model", Twin: "getModel", Handle: c.model},
		{Method: http.MethodPost, Path: "/models/:model", Twin: "updateModel", Handle: c.updateModel},
		{Method: http.MethodPost, Path: "/models/:model/enabled", Twin: "updateModel", Handle: c.setModelEnabled},
	}
}

// maxPickPages bounds how many pages of providers a picker lists.
const maxPickPages = 10

// allProviders lists the providers of kind k a picker offers, newest first.
func (c *Console) allProviders(r *wsRequest, k catalog.Kind) ([]provider.Provider, error) {
	var out []provider.Provider
	var cursor *string
	limit := resource.MaxLimit
	for range maxPickPages {
		page, err := c.svc.Providers.List(r.ctx(), r.caller, k, &limit, cursor)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.NextCursor == nil {
			break
		}
		cursor = page.NextCursor
	}
	return out, nil
}

// modelTarget is a provider and one API of its type, a model's place.
type modelTarget struct {
	// Value is "<provider id>:<api>", the picker's value.
	Value    string
	Provider provider.Provider
	TypeName string
	API      string
}

// modelTargets lists every enabled model provider with each API its type
// speaks.
func (c *Console) modelTargets(r *wsRequest) ([]modelTarget, error) {
	prvs, err := c.allProviders(r, catalog.KindModel)
	if err != nil {
		return nil, err
	}
	var out []modelTarget
	for _, p := range prvs {
		t, ok := c.svc.Types.Lookup(p.Type)
		if !ok || !p.Enabled {
			continue
		}
		for _, a := range t.APIs {
			out = append(out, modelTarget{Value: p.ID + ":" + a.ID, Provider: p, TypeName: t.DisplayName, API: a.ID})
		}
	}
	return out, nil
}

// modelsPage is the list of models.
type modelsPage struct {
	Items []model.Model
	Next  string
	// Providers are the names of the model providers, by id.
	Providers map[string]string
	// NoProviders: the workspace has no model provider yet.
	NoProviders bool
}

// models lists the models (GET).
func (c *Console) models(r *wsRequest) error {
	page, err := c.svc.Models.List(r.ctx(), r.caller, nil, r.cursor())
	if err != nil {
		return err
	}
	prvs, err := c.allProviders(r, catalog.KindModel)
	if err != nil {
		return err
	}
	d := &modelsPage{Items: page.Items, Providers: map[string]string{}, NoProviders: len(prvs) == 0}
	for _, p := range prvs {
		d.Providers[p.ID] = p.Name
	}
	d.Next = nextCursor(page.NextCursor)
	return c.renderIn(r, http.StatusOK, "models", "models", view{Title: "Models", Data: d})
}

// modelForm is the create page and the edit part of a model's page.
type modelForm struct {
	// Targets are the providers and APIs to pick from.
	Targets []modelTarget
	// Target is the picked one; nil until picked.
	Target   *modelTarget
	Settings schemaForm
}

// pickTarget finds the target named by value ("<provider>:<api>") among
// ts; nil when there is none.
func pickTarget(ts []modelTarget, value string) *modelTarget {
	for i := range ts {
		if ts[i].Value == value {
			return &ts[i]
		}
	}
	return nil
}

// settingsDoc is the settings schema of a target's API.
func (c *Console) settingsDoc(t *modelTarget) map[string]any {
	typ, ok := c.svc.Types.Lookup(t.Provider.Type)
	if !ok {
		return nil
	}
	a, ok := typ.API(t.API)
	if !ok {
		return nil
	}
	return a.Settings.Document()
}

// newModel shows the provider and API picker, then the model form (GET ?pick=).
func (c *Console) newModel(r *wsRequest) error {
	v := view{Form: map[string]string{"enabled": "true", "pick": r.ec.QueryParam("pick")}}
	return c.renderModelForm(r, http.StatusOK, v)
}

func (c *Console) renderModelForm(r *wsRequest, status int, v view) error {
	ts, err := c.modelTargets(r)
	if err != nil {
		return err
	}
	d := &modelForm{Targets: ts, Target: pickTarget(ts, v.Form["pick"])}
	if d.Target != nil {
		d.Settings = buildSchemaForm(c.settingsDoc(d.Target), "settings", v, false)
	} else if v.Form["pick"] != "" && status == http.StatusOK {
		status, v.Error = http.StatusNotFound, "That provider is not an enabled model provider of this workspace, or its type does not speak that API. Pick one below."
	}
	v.Title, v.Data = "New model", d
	return c.renderIn(r, status, "model_new", "models", v)
}

// createModel creates a model (POST).
func (c *Console) createModel(r *wsRequest) error {
	pick := r.form.Get("pick")
	v := view{Form: map[string]string{"pick": pick, "key": r.form.Get("key"), "model": r.form.Get("model"), "enabled": r.form.Get("enabled"),
		"context_window": r.form.Get("context_window")}, Fields: map[string]string{}}
	providerID, api, _ := strings.Cut(pick, ":")
	in := model.CreateInput{Key: strings.TrimSpace(r.form.Get("key")), ProviderID: providerID, API: api, Model: strings.TrimSpace(r.form.Get("model"))}
	if w, ok := formInt(r.form.Get("context_window")); ok {
		in.ContextWindow = w
	} else {
		v.Fields["context_window"] = "must be a whole number of tokens"
	}
	enabled := r.form.Get("enabled") == "true"
	in.Enabled = &enabled
	ts, err := c.modelTargets(r)
	if err != nil {
		return err
	}
	if t := pickTarget(ts, pick); t != nil {
		doc := c.settingsDoc(t)
		keepSchemaValues(doc, "settings", r.form, v.Form)
		in.Settings, _ = readSchemaForm(doc, "settings", r.form, v.Fields)
	}
	if len(v.Fields) == 0 {
		m, err := c.svc.Models.Create(r.ctx(), r.caller, in)
		if err == nil {
			return r.redirect(r.path("models", m.Key), "The model "+m.Key+" is created. Agents name it by its key.")
		}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		foldPickFields(&v)
		return c.renderModelForm(r, status, v)
	}
	v.Error = "Check the fields marked below."
	return c.renderModelForm(r, http.StatusUnprocessableEntity, v)
}

// foldPickFields shows refusals of provider_id and api beside the picker.
func foldPickFields(v *view) {
	for _, f := range []string{"provider_id", "api"} {
		if reason := v.Fields[f]; reason != "" && v.Fields["pick"] == "" {
			v.Fields["pick"] = f + " " + reason
		}
	}
}

// modelPage is a model with its forms.
type modelPage struct {
	Model        model.Model
	ProviderName string
	modelForm
}

// model shows a model and its edit form (GET). ?pick= moves the form to
// another provider or API, with that API's settings.
func (c *Console) model(r *wsRequest) error {
	m, err := c.svc.Models.Get(r.ctx(), r.caller, r.ec.Param("model"))
	if err != nil {
		return err
	}
	return c.renderModel(r, http.StatusOK, m, view{})
}

// renderModel renders a model's page. A v without form values fills the
// edit form with the model as stored (or moved to ?pick=).
func (c *Console) renderModel(r *wsRequest, status int, m model.Model, v view) error {
	d := &modelPage{Model: m}
	if p, err := c.svc.Providers.Get(r.ctx(), r.caller, catalog.KindModel, m.ProviderID); err == nil {
		d.ProviderName = p.Name
	}
	if v.Form == nil {
		v.Form = map[string]string{"pick": m.ProviderID + ":" + m.API, "model": m.Model, "etag": m.ETag()}
		if m.ContextWindow != nil {
			v.Form["context_window"] = strconv.Itoa(*m.ContextWindow)
		}
		if pick := r.ec.QueryParam("pick"); pick != "" {
			v.Form["pick"] = pick
		}
		schemaValues(nil, "settings", m.Settings, v.Form)
	}
	if r.can(auth.PermWrite) {
		ts, err := c.modelTargets(r)
		if err != nil {
			return err
		}
		d.Targets = ts
		d.Target = pickTarget(ts, v.Form["pick"])
		if d.Target == nil {
			// The model's own provider may be disabled: it stays the
			// model's place, with its settings, until it is moved.
			if p, err := c.svc.Providers.Get(r.ctx(), r.caller, catalog.KindModel, m.ProviderID); err == nil && v.Form["pick"] == m.ProviderID+":"+m.API {
				t := modelTarget{Value: v.Form["pick"], Provider: p, API: m.API}
				if typ, ok := c.svc.Types.Lookup(p.Type); ok {
					t.TypeName = typ.DisplayName
				}
				d.Target = &t
			}
		}
		if d.Target != nil {
			d.Settings = buildSchemaForm(c.settingsDoc(d.Target), "settings", v, false)
		}
	}
	v.Title, v.Data = m.Key, d
	return c.renderIn(r, status, "model", "models", v)
}

// updateModel saves the edit form (POST).
func (c *Console) updateModel(r *wsRequest) error {
	m, err := c.svc.Models.Get(r.ctx(), r.caller, r.ec.Param("model"))
	if err != nil {
		return err
	}
	pick, etag := r.form.Get("pick"), r.form.Get("etag")
	v := view{Form: map[string]string{"pick": pick, "model": r.form.Get("model"), "etag": etag, "context_window": r.form.Get("context_window")}, Fields: map[string]string{}}
	providerID, api, _ := strings.Cut(pick, ":")
	name := strings.TrimSpace(r.form.Get("model"))
	in := model.UpdateInput{Key: m.Key, IfMatch: &etag, ProviderID: &providerID, API: &api, Model: &name, SetContextWindow: true}
	if w, ok := formInt(r.form.Get("context_window")); ok {
		in.ContextWindow = w
	} else {
		v.Fields["context_window"] = "must be a whole number of tokens"
	}
	doc := c.settingsDoc(&modelTarget{Provider: provider.Provider{Type: c.providerType(r, providerID)}, API: api})
	keepSchemaValues(doc, "settings", r.form, v.Form)
	in.Settings, _ = readSchemaForm(doc, "settings", r.form, v.Fields)
	if len(v.Fields) == 0 {
		nm, err := c.svc.Models.Update(r.ctx(), r.caller, in)
		if err == nil {
			return r.redirect(r.path("models", nm.Key), "The model "+nm.Key+" is saved.")
		}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		foldPickFields(&v)
		return c.renderModel(r, status, m, v)
	}
	v.Error = "Check the fields marked below."
	return c.renderModel(r, http.StatusUnprocessableEntity, m, v)
}

// providerType is the type of a model provider of the workspace, "" when
// there is none.
func (c *Console) providerType(r *wsRequest, id string) string {
	p, err := c.svc.Providers.Get(r.ctx(), r.caller, catalog.KindModel, id)
	if err != nil {
		return ""
	}
	return p.Type
}

// setModelEnabled enables or disables a model (POST enabled=true|false).
func (c *Console) setModelEnabled(r *wsRequest) error {
	etag := r.form.Get("etag")
	enabled := r.form.Get("enabled") == "true"
	m, err := c.svc.Models.Update(r.ctx(), r.caller, model.UpdateInput{Key: r.ec.Param("model"), IfMatch: &etag, Enabled: &enabled})
	if err != nil {
		v := view{}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		cur, gerr := c.svc.Models.Get(r.ctx(), r.caller, r.ec.Param("model"))
		if gerr != nil {
			return gerr
		}
		return c.renderModel(r, status, cur, v)
	}
	notice := "The model " + m.Key + " is enabled."
	if !m.Enabled {
		notice = "The model " + m.Key + " is disabled: runs that name it are refused until it is enabled again."
	}
	return r.redirect(r.path("models", m.Key), notice)
}
