package console

import (
	"net/http"
	"strings"

	"github.com/svcdev/svc/internal/memory"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
)

// memoryRoutes are the Memories section: what runs remember across
// threads. Members see them; editors create, rename and delete them.
func (c *Console) memoryRoutes() []route {
	return []route{
		{Method: http.MethodGet, Path: "/memories", Twin: "listMemories", Handle: c.memories},
		{Method: http.MethodPost, Path: "/memories", Twin: "createMemory", Handle: c.createMemory},
		{Method: http.MethodGet, Path: "/memories/:memory", Twin: "getMemory", Handle: c.memoryPage},
		{Method: http.MethodPost, Path: "/memories/:memory", Twin: "updateMemory", Handle: c.updateMemory},
		{Method: http.MethodPost, Path: "/memories/:memory/delete", Twin: "deleteMemory", Handle: c.deleteMemory},
	}
}

// memoriesPage is what the memories list shows.
type memoriesPage struct {
	Memories []memory.Memory
	Next     string
	// Providers are the workspace's memory providers, for record memories.
	Providers []provider.Provider
}

// providerChoices bounds the memory providers the create form offers.
const providerChoices = 100

func (c *Console) memoriesView(r *wsRequest, v view) (view, error) {
	page, err := c.svc.Memories.List(r.ctx(), r.caller, nil, listCursor(r))
	if err != nil {
		return v, err
	}
	d := &memoriesPage{Memories: page.Items, Next: nextCursor(page.NextCursor)}
	if r.can("write") {
		n := providerChoices
		ps, err := c.svc.Providers.List(r.ctx(), r.caller, catalog.KindMemory, &n, nil)
		if err != nil {
			return v, err
		}
		d.Providers = ps.Items
	}
	v.Data, v.Title = d, "Memories"
	return v, nil
}

// memories lists the workspace's memories, with the form to make one (GET).
func (c *Console) memories(r *wsRequest) error {
	v, err := c.memoriesView(r, view{Form: map[string]string{"kind": string(memory.KindBuiltin)}})
	if err != nil {
		return err
	}
	return c.renderIn(r, http.StatusOK, "memories", "memories", v)
}

// createMemory makes a memory (POST): builtin, kept in svc's database, or
// record, kept by a memory provider of the workspace.
func (c *Console) createMemory(r *wsRequest) error {
	form := map[string]string{"name": strings.TrimSpace(r.form.Get("name")), "description": strings.TrimSpace(r.form.Get("description")),
		"kind": r.form.Get("kind"), "memory_provider_id": r.form.Get("memory_provider_id")}
	in := memory.CreateInput{Name: form["name"], Description: form["description"], Kind: memory.Kind(form["kind"])}
	if in.Kind == memory.KindRecord && form["memory_provider_id"] != "" {
		p := form["memory_provider_id"]
		in.ProviderID = &p
	}
	m, err := c.svc.Memories.Create(r.ctx(), r.caller, in)
	if err != nil {
		v := view{Form: form}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		v, lerr := c.memoriesView(r, v)
		if lerr != nil {
			return lerr
		}
		return c.renderIn(r, status, "memories", "memories", v)
	}
	return r.redirect(r.path("memories", m.ID), "The memory "+m.Name+" is made. Give it to an agent for its runs to use it.")
}

func (c *Console) memoryView(r *wsRequest, v view) (view, error) {
	m, err := c.svc.Memories.Get(r.ctx(), r.caller, r.ec.Param("memory"))
	if err != nil {
		return v, err
	}
	if v.Form == nil {
		v.Form = map[string]string{"name": m.Name, "description": m.Description}
	}
	v.Data, v.Title = m, "Memory "+m.Name
	return v, nil
}

// memoryPage shows a memory, with the form to rename it (GET).
func (c *Console) memoryPage(r *wsRequest) error {
	v, err := c.memoryView(r, view{})
	if err != nil {
		return err
	}
	return c.renderIn(r, http.StatusOK, "memory", "memories", v)
}

// memoryRefused renders the memory's page with what the service refused.
func (c *Console) memoryRefused(r *wsRequest, form map[string]string, err error) error {
	v := view{Form: form}
	status, ok := formError(&v, err)
	if !ok {
		return err
	}
	v, lerr := c.memoryView(r, v)
	if lerr != nil {
		return lerr
	}
	return c.renderIn(r, status, "memory", "memories", v)
}

// updateMemory renames or re-describes a memory (POST, with the page's ETag).
func (c *Console) updateMemory(r *wsRequest) error {
	form := map[string]string{"name": strings.TrimSpace(r.form.Get("name")), "description": strings.TrimSpace(r.form.Get("description"))}
	etag := r.form.Get("etag")
	name, desc := form["name"], form["description"]
	m, err := c.svc.Memories.Update(r.ctx(), r.caller, memory.UpdateInput{ID: r.ec.Param("memory"), IfMatch: &etag, Name: &name, Description: &desc})
	if err != nil {
		return c.memoryRefused(r, form, err)
	}
	return r.redirect(r.path("memories", m.ID), "The memory is saved.")
}

// deleteMemory deletes a memory and its records (POST, with the page's ETag).
func (c *Console) deleteMemory(r *wsRequest) error {
	etag := r.form.Get("etag")
	if err := c.svc.Memories.Delete(r.ctx(), r.caller, r.ec.Param("memory"), &etag); err != nil {
		return c.memoryRefused(r, nil, err)
	}
	return r.redirect(r.path("memories"), "The memory and its records are deleted.")
}
