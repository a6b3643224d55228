package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"

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
		{Method: http.MethodGet, Path: "/memories/:memory/records", Twin: "listMemoryRecords", Handle: c.memoryRecords},
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
	page, err := c.svc.Memories.List(r.ctx(), r.caller, nil, r.cursor())
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

// memoryRecordsPage is what a memory's records page shows.
type memoryRecordsPage struct {
	Memory  memory.Memory
	Records []recordRow
	// Query is the search the records answer; "" lists them newest first.
	Query string
	Next  string
}

// memoryRecords browses a builtin memory's records, newest first, or
// searches them with q, best first (GET). The memory is read too, for its
// name and kind; getMemory needs the same read permission as the twin. A
// refused search or cursor, and a record memory (whose records its provider
// keeps), are explained on the page, which answers 200 like every GET.
func (c *Console) memoryRecords(r *wsRequest) error {
	m, err := c.svc.Memories.Get(r.ctx(), r.caller, r.ec.Param("memory"))
	if err != nil {
		return err
	}
	q := strings.TrimSpace(r.ec.QueryParam("q"))
	d := &memoryRecordsPage{Memory: m, Query: q}
	v := view{Title: "Records of " + m.Name, Data: d, Form: map[string]string{"q": q}}
	page, err := c.svc.Memories.ListRecords(r.ctx(), r.caller, memory.RecordQuery{MemoryID: m.ID, Query: q, Cursor: r.cursor()})
	if err != nil {
		if _, ok := formError(&v, err); !ok {
			return err
		}
		return c.renderIn(r, http.StatusOK, "memory_records", "memories", v)
	}
	for _, rec := range page.Items {
		d.Records = append(d.Records, recordRowOf(rec))
	}
	d.Next = nextCursor(page.NextCursor)
	return c.renderIn(r, http.StatusOK, "memory_records", "memories", v)
}

// recordRow is a record as its page shows it.
type recordRow struct {
	ID        string
	Content   string
	CreatedAt time.Time
	// Score is a search's rank, "" outside searches.
	Score string
	// Metadata is the indented metadata object, "" when it is empty.
	Metadata string
}

func recordRowOf(rec memory.Record) recordRow {
	row := recordRow{ID: rec.ID, Content: rec.Content, CreatedAt: rec.CreatedAt}
	if rec.Score != nil {
		row.Score = strconv.FormatFloat(*rec.Score, 'g', 4, 64)
	}
	if md := prettyJSON(rec.Metadata); md != "{}" && md != "" {
		row.Metadata = md
	}
	return row
}
