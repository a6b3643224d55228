package console

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/revision"
)

// The pages of the revisioned heads, agents and skills: a list with
// filters, a head with its revisions, one revision, and the forms to create,
// publish, roll back, archive and edit. Both sections are these pages over
// their own service (pages_agents.go, pages_skills.go).

// headKind is one section of revisioned heads.
type headKind struct {
	// Section is the section's path ("agents"), Param the route parameter of
	// a head ("agent"), Noun what one is called ("agent"), Title the
	// section's label ("Agents").
	Section, Param, Noun, Title string
	// Twin is the kind's name in the API's operation ids ("Agent":
	// listAgents, getAgent, publishAgentRevision...).
	Twin string
	// svc is the kind's service; it is read when a page is asked for, so
	// the routes can be listed without services (the permission table).
	svc func() headService
	// Example is the configuration a new head's editor starts with.
	Example string
	// ConfigHelp explains the configuration beside the editor.
	ConfigHelp string
	// Packages: the kind's configurations may name a package asset.
	Packages bool
}

// headService is what the pages call: revision.Service of either kind,
// with its revisions' configurations seen as values to show.
type headService interface {
	List(ctx context.Context, c *auth.Caller, in revision.ListInput) (revision.Page, error)
	Create(ctx context.Context, c *auth.Caller, in revision.CreateInput) (revision.Head, error)
	Get(ctx context.Context, c *auth.Caller, headID string) (revision.Head, error)
	Update(ctx context.Context, c *auth.Caller, in revision.UpdateInput) (revision.Head, error)
	Archive(ctx context.Context, c *auth.Caller, headID string, ifMatch *string) (revision.Head, error)
	Unarchive(ctx context.Context, c *auth.Caller, headID string, ifMatch *string) (revision.Head, error)
	publish(ctx context.Context, c *auth.Caller, in revision.PublishInput) (revisionView, bool, error)
	revisions(ctx context.Context, c *auth.Caller, headID string, cursor *string) ([]revisionView, *string, error)
	revision(ctx context.Context, c *auth.Caller, headID, revisionID string) (revisionView, error)
}

// revisioned adapts the revision service of configurations C.
type revisioned[C any] struct {
	*revision.Service[C]
	// refs lists what a configuration names that has a page of its own.
	refs func(C) []reference
}

// revisionView is a revision as the pages show it.
type revisionView struct {
	ID          string
	Number      int32
	Config      any
	ContentHash string
	CreatedByID string
	CreatedAt   time.Time
	References  []reference
}

// reference is something a configuration names, with the parts of its
// page's path under the workspace; URL is that page's address, filled in for
// the page that shows it.
type reference struct {
	Label string
	Parts []string
	URL   string
}

func (s revisioned[C]) view(r revision.Revision[C]) revisionView {
	return revisionView{ID: r.ID, Number: r.Number, Config: r.Config, ContentHash: r.ContentHash,
		CreatedByID: r.CreatedByID, CreatedAt: r.CreatedAt, References: s.refs(r.Config)}
}

func (s revisioned[C]) publish(ctx context.Context, c *auth.Caller, in revision.PublishInput) (revisionView, bool, error) {
	p, err := s.Publish(ctx, c, in)
	if err != nil {
		return revisionView{}, false, err
	}
	return s.view(p.Revision), p.Created, nil
}

func (s revisioned[C]) revisions(ctx context.Context, c *auth.Caller, headID string, cursor *string) ([]revisionView, *string, error) {
	page, err := s.ListRevisions(ctx, c, headID, nil, cursor)
	if err != nil {
		return nil, nil, err
	}
	out := make([]revisionView, len(page.Items))
	for i, r := range page.Items {
		out[i] = s.view(r)
	}
	return out, page.NextCursor, nil
}

func (s revisioned[C]) revision(ctx context.Context, c *auth.Caller, headID, revisionID string) (revisionView, error) {
	r, err := s.GetRevision(ctx, c, headID, revisionID)
	if err != nil {
		return revisionView{}, err
	}
	return s.view(r), nil
}

// headRoutes are the routes of section k.
func (c *Console) headRoutes(k *headKind) []route {
	head := "/" + k.Section + "/:" + k.Param
	h := func(f func(*wsRequest, *headKind) error) func(*wsRequest) error {
		return func(r *wsRequest) error { return f(r, k) }
	}
	return []route{
		{Method: http.MethodGet, Path: "/" + k.Section, Twin: "list" + k.Twin + "s", Handle: h(c.heads)},
		{Method: http.MethodGet, Path: "/" + k.Section + "/new", Twin: "create" + k.Twin, Handle: h(c.newHead)},
		{Method: http.MethodPost, Path: "/" + k.Section + "/new", Twin: "create" + k.Twin, Handle: h(c.createHead)},
		// The head's page shows its revisions too (list<Kind>Revisions needs
		// the same read permission).
		{Method: http.MethodGet, Path: head, Twin: "get" + k.Twin, Handle: h(c.head)},
		{Method: http.MethodGet, Path: head + "/edit", Twin: "update" + k.Twin, Handle: h(c.editHeadForm)},
		{Method: http.MethodPost, Path: head + "/edit", Twin: "update" + k.Twin, Handle: h(c.editHead)},
		{Method: http.MethodPost, Path: head + "/default", Twin: "update" + k.Twin, Handle: h(c.setDefaultRevision)},
		{Method: http.MethodPost, Path: head + "/archive", Twin: "archive" + k.Twin, Handle: h(c.archiveHead)},
		{Method: http.MethodPost, Path: head + "/unarchive", Twin: "unarchive" + k.Twin, Handle: h(c.unarchiveHead)},
		{Method: http.MethodGet, Path: head + "/publish", Twin: "publish" + k.Twin + "Revision", Handle: h(c.publishForm)},
		{Method: http.MethodPost, Path: head + "/publish", Twin: "publish" + k.Twin + "Revision", Handle: h(c.publishRevision)},
		{Method: http.MethodGet, Path: head + "/revisions/:revision", Twin: "get" + k.Twin + "Revision", Handle: h(c.headRevision)},
	}
}

// headsPage is what the list shows.
type headsPage struct {
	Kind  *headKind
	Heads []revision.Head
	Next  string
	// The filters as asked: label selectors (key:value), search text, and
	// archived ("", "true" or "false").
	Labels   []string
	Q        string
	Archived string
	// Filtered: some filter is set.
	Filtered bool
}

// LabelInputs are the label selector inputs of the filter form: one per
// selector asked, and an empty one while more may be added.
func (p *headsPage) LabelInputs() []string {
	out := slices.Clone(p.Labels)
	if len(out) < maxLabelSelectors {
		out = append(out, "")
	}
	return out
}

// maxLabelSelectors is how many label selectors a list takes (labels.MaxSelectors).
const maxLabelSelectors = 8

// heads lists the section's heads (GET), filtered as the query asks.
func (c *Console) heads(r *wsRequest, k *headKind) error {
	q := r.ec.QueryParams()
	d := &headsPage{Kind: k, Q: strings.TrimSpace(q.Get("q")), Archived: q.Get("archived")}
	for _, l := range q["label"] {
		if l = strings.TrimSpace(l); l != "" {
			d.Labels = append(d.Labels, l)
		}
	}
	in := revision.ListInput{Labels: d.Labels}
	if d.Q != "" {
		in.Q = &d.Q
	}
	switch d.Archived {
	case "true", "false":
		b := d.Archived == "true"
		in.Archived = &b
	default:
		d.Archived = ""
	}
	d.Filtered = len(d.Labels) > 0 || d.Q != "" || d.Archived != ""
	if cur := q.Get("cursor"); cur != "" {
		in.Cursor = &cur
	}
	if n, ok := formInt(q.Get("limit")); ok && n != nil {
		in.Limit = n
	}
	v := view{Title: k.Title, Data: d}
	page, err := k.svc().List(r.ctx(), r.caller, in)
	if err != nil {
		// A refused filter is shown beside the filters; the page itself is
		// there (a GET answers 200 with the reason, as the contract has it).
		if _, ok := formError(&v, err); !ok {
			return err
		}
		return c.renderIn(r, http.StatusOK, "revisioned_list", k.Section, v)
	}
	d.Heads = page.Items
	d.Next = nextCursor(page.NextCursor)
	return c.renderIn(r, http.StatusOK, "revisioned_list", k.Section, v)
}

// headForm is what the create, edit and publish forms show besides the
// typed values (view.Form: name, description, labels, config, make_default).
type headForm struct {
	Kind *headKind
	// Head is the head being edited or published to; nil when creating.
	Head *revision.Head
	// From is the revision the publish form started from.
	From *revisionView
	// ConfigErrors are the refusals of the configuration and its members,
	// each with its path (config.model, config.skills[0].skill_id...).
	ConfigErrors []fieldError
	// LabelErrors are the refusals of the labels (labels, labels.<key>).
	LabelErrors []fieldError
}

// fieldError is one refused field with its path.
type fieldError struct{ Field, Reason string }

// fieldsUnder lists the refused fields named prefix or under it (prefix.x,
// prefix[0]), sorted by path; every refused field for prefix "".
func fieldsUnder(fields map[string]string, prefix string) []fieldError {
	var out []fieldError
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if prefix == "" || f == prefix || strings.HasPrefix(f, prefix+".") || strings.HasPrefix(f, prefix+"[") {
			out = append(out, fieldError{Field: f, Reason: fields[f]})
		}
	}
	return out
}

// collect fills the form's lists of refusals from v's fields, adding the
// fields of a refusal formError explains by its message alone (a disabled
// model, an archived skill: 409 naming config.model, config.skills[0]...).
func (d *headForm) collect(v *view, err error) {
	if ae, ok := apperr.As(err); ok {
		for _, det := range ae.Details {
			if v.Fields == nil {
				v.Fields = map[string]string{}
			}
			if v.Fields[det.Field] == "" {
				v.Fields[det.Field] = det.Reason
			}
		}
	}
	d.ConfigErrors, d.LabelErrors = fieldsUnder(v.Fields, "config"), fieldsUnder(v.Fields, "labels")
}

// parseLabels reads labels written one `key=value` per line; blank lines
// are skipped. A line without "=" or a key written twice is refused by line.
func parseLabels(text string) (map[string]string, string) {
	out := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch _, twice := out[k]; {
		case !ok:
			return nil, fmt.Sprintf("line %d: write each label as key=value", i+1)
		case twice:
			return nil, fmt.Sprintf("line %d: the key %s is given twice", i+1, k)
		}
		out[k] = v
	}
	return out, ""
}

// labelsText writes labels one `key=value` per line, sorted by key.
func labelsText(l map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(l)) {
		b.WriteString(k + "=" + l[k] + "\n")
	}
	return b.String()
}

// configText is a configuration as the editor shows it: indented JSON.
func configText(cfg any) (string, error) {
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode config for the editor: %w", err)
	}
	return string(raw), nil
}

// newHead shows the form to create a head (GET).
func (c *Console) newHead(r *wsRequest, k *headKind) error {
	v := view{Title: "New " + k.Noun, Form: map[string]string{"config": k.Example}, Data: &headForm{Kind: k}}
	return c.renderIn(r, http.StatusOK, "revisioned_new", k.Section, v)
}

// createHead creates a head with its revision 1 and goes to its page (POST).
func (c *Console) createHead(r *wsRequest, k *headKind) error {
	form := map[string]string{"name": r.form.Get("name"), "description": r.form.Get("description"),
		"labels": r.form.Get("labels"), "config": r.form.Get("config")}
	d := &headForm{Kind: k}
	v := view{Title: "New " + k.Noun, Form: form, Data: d, Fields: map[string]string{}}
	lbl, bad := parseLabels(form["labels"])
	if bad != "" {
		v.Fields["labels"], v.Error = bad, "Check the fields marked below."
		d.collect(&v, nil)
		return c.renderIn(r, http.StatusUnprocessableEntity, "revisioned_new", k.Section, v)
	}
	desc := strings.TrimSpace(form["description"])
	h, err := k.svc().Create(r.ctx(), r.caller, revision.CreateInput{
		Name: strings.TrimSpace(form["name"]), Description: &desc, Labels: lbl, Config: json.RawMessage(form["config"]),
	})
	if err != nil {
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		d.collect(&v, err)
		return c.renderIn(r, status, "revisioned_new", k.Section, v)
	}
	return r.redirect(r.path(k.Section, h.ID), "The "+k.Noun+" "+h.Name+" is created with revision 1 as its default.")
}

// headPage is what a head's page shows.
type headPage struct {
	Kind      *headKind
	Head      revision.Head
	Revisions []revisionView
	Next      string
}

// headView loads a head and a page of its revisions into v.
func (c *Console) headView(r *wsRequest, k *headKind, v view) (view, error) {
	id := r.ec.Param(k.Param)
	h, err := k.svc().Get(r.ctx(), r.caller, id)
	if err != nil {
		return v, err
	}
	cursor := r.cursor()
	revs, next, err := k.svc().revisions(r.ctx(), r.caller, id, cursor)
	if err != nil {
		return v, err
	}
	d := &headPage{Kind: k, Head: h, Revisions: revs}
	if next != nil {
		d.Next = *next
	}
	v.Title, v.Data = h.Name, d
	return v, nil
}

// head shows a head and its revisions (GET).
func (c *Console) head(r *wsRequest, k *headKind) error {
	v, err := c.headView(r, k, view{})
	if err != nil {
		return err
	}
	return c.renderIn(r, http.StatusOK, "revisioned_head", k.Section, v)
}

// headRefused shows the head's page again with what the service refused of
// a change made from it (a stale ETag, an archived head...).
func (c *Console) headRefused(r *wsRequest, k *headKind, err error) error {
	var v view
	status, ok := formError(&v, err)
	if !ok {
		return err
	}
	if len(v.Fields) > 0 {
		// The page has no field to mark: the reasons are the message.
		var reasons []string
		for _, f := range fieldsUnder(v.Fields, "") {
			reasons = append(reasons, sentence(f.Reason))
		}
		v.Error, v.Fields = strings.Join(reasons, " "), nil
	}
	v, lerr := c.headView(r, k, v)
	if lerr != nil {
		return lerr
	}
	return c.renderIn(r, status, "revisioned_head", k.Section, v)
}

// etag is the ETag a form carried.
func (r *wsRequest) etag() *string {
	e := r.form.Get("etag")
	return &e
}

// setDefaultRevision makes one of the head's revisions its default: a roll
// back, or forward again (POST).
func (c *Console) setDefaultRevision(r *wsRequest, k *headKind) error {
	rev := r.form.Get("revision")
	h, err := k.svc().Update(r.ctx(), r.caller, revision.UpdateInput{ID: r.ec.Param(k.Param), IfMatch: r.etag(), DefaultRevisionID: &rev})
	if err != nil {
		return c.headRefused(r, k, err)
	}
	return r.redirect(r.path(k.Section, h.ID), "The default revision of "+h.Name+" is "+rev+": new runs use it.")
}

// archiveHead archives a head (POST).
func (c *Console) archiveHead(r *wsRequest, k *headKind) error {
	h, err := k.svc().Archive(r.ctx(), r.caller, r.ec.Param(k.Param), r.etag())
	if err != nil {
		return c.headRefused(r, k, err)
	}
	return r.redirect(r.path(k.Section, h.ID), "The "+k.Noun+" "+h.Name+" is archived.")
}

// unarchiveHead makes an archived head active again (POST).
func (c *Console) unarchiveHead(r *wsRequest, k *headKind) error {
	h, err := k.svc().Unarchive(r.ctx(), r.caller, r.ec.Param(k.Param), r.etag())
	if err != nil {
		return c.headRefused(r, k, err)
	}
	return r.redirect(r.path(k.Section, h.ID), "The "+k.Noun+" "+h.Name+" is active again.")
}

// editHeadForm shows the form to change a head's name, description and
// labels (GET).
func (c *Console) editHeadForm(r *wsRequest, k *headKind) error {
	h, err := k.svc().Get(r.ctx(), r.caller, r.ec.Param(k.Param))
	if err != nil {
		return err
	}
	v := view{Title: "Edit " + h.Name, Data: &headForm{Kind: k, Head: &h}, Form: map[string]string{
		"name": h.Name, "description": h.Description, "labels": labelsText(h.Labels), "etag": h.ETag(),
	}}
	return c.renderIn(r, http.StatusOK, "revisioned_edit", k.Section, v)
}

// editHead saves a head's name, description and labels, if it did not
// change since the form was opened (POST).
func (c *Console) editHead(r *wsRequest, k *headKind) error {
	h, err := k.svc().Get(r.ctx(), r.caller, r.ec.Param(k.Param))
	if err != nil {
		return err
	}
	form := map[string]string{"name": r.form.Get("name"), "description": r.form.Get("description"),
		"labels": r.form.Get("labels"), "etag": r.form.Get("etag")}
	d := &headForm{Kind: k, Head: &h}
	v := view{Title: "Edit " + h.Name, Form: form, Data: d, Fields: map[string]string{}}
	lbl, bad := parseLabels(form["labels"])
	if bad != "" {
		v.Fields["labels"], v.Error = bad, "Check the fields marked below."
		d.collect(&v, nil)
		return c.renderIn(r, http.StatusUnprocessableEntity, "revisioned_edit", k.Section, v)
	}
	name, desc := strings.TrimSpace(form["name"]), strings.TrimSpace(form["description"])
	etag := form["etag"]
	saved, err := k.svc().Update(r.ctx(), r.caller, revision.UpdateInput{
		ID: h.ID, IfMatch: &etag, Name: &name, Description: &desc, Labels: lbl,
	})
	if err != nil {
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		d.collect(&v, err)
		return c.renderIn(r, status, "revisioned_edit", k.Section, v)
	}
	return r.redirect(r.path(k.Section, saved.ID), "The "+k.Noun+" "+saved.Name+" is saved.")
}

// publishForm shows the editor to publish a revision, starting from the
// default revision's configuration or from ?from=<revision> (GET).
func (c *Console) publishForm(r *wsRequest, k *headKind) error {
	h, err := k.svc().Get(r.ctx(), r.caller, r.ec.Param(k.Param))
	if err != nil {
		return err
	}
	from := h.DefaultRevisionID
	if f := r.ec.QueryParam("from"); f != "" {
		from = f
	}
	rev, err := k.svc().revision(r.ctx(), r.caller, h.ID, from)
	if err != nil {
		return err
	}
	text, err := configText(rev.Config)
	if err != nil {
		return err
	}
	v := view{Title: "Publish a revision of " + h.Name, Data: &headForm{Kind: k, Head: &h, From: &rev},
		Form: map[string]string{"config": text, "make_default": "on"}}
	return c.renderIn(r, http.StatusOK, "revisioned_publish", k.Section, v)
}

// publishRevision publishes the editor's configuration as the head's next
// revision, its default unless unchecked (POST). Content identical to the
// default revision publishes nothing and says so.
func (c *Console) publishRevision(r *wsRequest, k *headKind) error {
	h, err := k.svc().Get(r.ctx(), r.caller, r.ec.Param(k.Param))
	if err != nil {
		return err
	}
	form := map[string]string{"config": r.form.Get("config"), "make_default": r.form.Get("make_default")}
	makeDefault := form["make_default"] != ""
	rev, created, err := k.svc().publish(r.ctx(), r.caller, revision.PublishInput{
		HeadID: h.ID, Config: json.RawMessage(form["config"]), MakeDefault: &makeDefault,
	})
	if err != nil {
		d := &headForm{Kind: k, Head: &h}
		v := view{Title: "Publish a revision of " + h.Name, Form: form, Data: d}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		d.collect(&v, err)
		return c.renderIn(r, status, "revisioned_publish", k.Section, v)
	}
	n := strconv.Itoa(int(rev.Number))
	notice := "Revision " + n + " of " + h.Name + " is published"
	switch {
	case !created:
		notice = "The configuration is the same as the default revision " + n + ", so nothing was published."
	case makeDefault:
		notice += " and is its default: new runs use it."
	default:
		notice += ". The default revision is unchanged."
	}
	return r.redirect(r.path(k.Section, h.ID, "revisions", rev.ID), notice)
}

// revisionPage is what one revision's page shows.
type revisionPage struct {
	Kind     *headKind
	Head     revision.Head
	Revision revisionView
}

// headRevision shows one revision with its configuration (GET).
func (c *Console) headRevision(r *wsRequest, k *headKind) error {
	h, err := k.svc().Get(r.ctx(), r.caller, r.ec.Param(k.Param))
	if err != nil {
		return err
	}
	rev, err := k.svc().revision(r.ctx(), r.caller, h.ID, r.ec.Param("revision"))
	if err != nil {
		return err
	}
	for i, ref := range rev.References {
		rev.References[i].URL = r.path(ref.Parts...)
	}
	v := view{Title: h.Name + ", revision " + strconv.Itoa(int(rev.Number)), Data: &revisionPage{Kind: k, Head: h, Revision: rev}}
	return c.renderIn(r, http.StatusOK, "revisioned_revision", k.Section, v)
}
