package console

import (
	"net/http"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/identity"
)

// auditRoutes are the Audit log section: the workspace's trail, filtered by
// actor, action, subject and time as the API filters it.
func (c *Console) auditRoutes() []route {
	return []route{
		{Method: http.MethodGet, Path: "/audit", Twin: "listAuditEvents", Handle: c.auditLog},
	}
}

// auditPage is what the audit log shows.
type auditPage struct {
	Events []identity.AuditEvent
	Next   string
	// Filtered: the page shows only the events the filters select.
	Filtered bool
}

// auditTimeLayout is how the filter form's datetime-local inputs send a
// time; the page reads it as UTC.
const auditTimeLayout = "2006-01-02T15:04"

// auditLog lists the trail, newest first, with the filters of the query
// (GET). A filter it cannot read is said beside its field.
func (c *Console) auditLog(r *wsRequest) error {
	v := view{Title: "Audit log", Form: map[string]string{}, Fields: map[string]string{}}
	in := identity.ListAuditEventsInput{PageInput: identity.PageInput{Cursor: r.cursor()}}
	for name, dst := range map[string]**string{"actor_id": &in.ActorID, "action": &in.Action, "subject_id": &in.SubjectID} {
		if s := strings.TrimSpace(r.ec.QueryParam(name)); s != "" {
			v.Form[name], *dst = s, &s
		}
	}
	for name, dst := range map[string]**time.Time{"since": &in.Since, "until": &in.Until} {
		s := strings.TrimSpace(r.ec.QueryParam(name))
		if s == "" {
			continue
		}
		v.Form[name] = s
		t, err := time.Parse(auditTimeLayout, s)
		if err != nil {
			v.Fields[name] = "must be a date and time, such as 2025-01-31T14:00"
			continue
		}
		*dst = &t
	}
	d := &auditPage{Filtered: len(v.Form) > 0}
	v.Data = d
	if len(v.Fields) > 0 {
		v.Error = "Check the filters marked below."
		return c.renderIn(r, http.StatusOK, "audit", "audit", v)
	}
	page, err := c.svc.Identity.ListAuditEvents(r.ctx(), r.caller, in)
	if err != nil {
		// A refused filter is said on the page (GET pages answer 200).
		if _, ok := formError(&v, err); !ok {
			return err
		}
		return c.renderIn(r, http.StatusOK, "audit", "audit", v)
	}
	d.Events, d.Next = page.Items, nextCursor(page.NextCursor)
	return c.renderIn(r, http.StatusOK, "audit", "audit", v)
}
