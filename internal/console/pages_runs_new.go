package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
)

// newRunPage is what the playground shows.
type newRunPage struct {
	// Agents are the workspace's active agents.
	Agents []revision.Head
	// Revisions are the revisions of the agent chosen (its first page), to
	// pick one from.
	Revisions []agent.Revision
}

// newRunView fills the playground's lists into v, for the agent v's form
// holds.
func (c *Console) newRunView(r *wsRequest, v view) (view, error) {
	heads, err := c.agentHeads(r, true)
	if err != nil {
		return v, err
	}
	d := &newRunPage{Agents: heads}
	if a := v.Form["agent_id"]; a != "" {
		for _, h := range heads {
			if h.ID == a {
				page, err := c.svc.Agents.ListRevisions(r.ctx(), r.caller, a, nil, nil)
				if err != nil {
					return v, err
				}
				d.Revisions = page.Items
			}
		}
	}
	v.Title, v.Data = "Playground", d
	return v, nil
}

// newRunForm is the playground: pick an agent and optionally one of its
// revisions, type an input, start a run (GET). ?agent= picks the agent.
func (c *Console) newRunForm(r *wsRequest) error {
	v, err := c.newRunView(r, view{Form: map[string]string{"agent_id": r.ec.QueryParam("agent")}})
	if err != nil {
		return err
	}
	return c.renderIn(r, http.StatusOK, "run_new", "runs", v)
}

// startRun starts the playground's run and shows it live (POST). Without a
// revision it is the one-call start on a new thread (run.Service.Start);
// with one, a thread pinned to that revision is made and the input posted
// to it.
func (c *Console) startRun(r *wsRequest) error {
	form := map[string]string{"agent_id": strings.TrimSpace(r.form.Get("agent_id")), "revision_id": strings.TrimSpace(r.form.Get("revision_id")),
		"input": r.form.Get("input")}
	v := view{Form: form, Fields: map[string]string{}}
	var runID string
	var err error
	switch {
	case form["agent_id"] == "":
		v.Fields["agent_id"] = "choose an agent"
	case form["revision_id"] == "":
		var rn run.Run
		rn, err = c.svc.Runs.Start(r.ctx(), r.caller, run.StartInput{AgentID: form["agent_id"], Input: form["input"]})
		runID = rn.ID
	default:
		runID, err = c.startPinned(r, form["agent_id"], form["revision_id"], form["input"])
	}
	if err == nil && len(v.Fields) == 0 {
		return r.redirect(r.path("runs", runID), "The run started.")
	}
	status := http.StatusUnprocessableEntity
	if len(v.Fields) > 0 {
		v.Error = "Check the fields marked below."
	} else {
		var ok bool
		if status, ok = formError(&v, err); !ok {
			return err
		}
		setRetryAfter(r, err, status)
		// The thread's input is the playground's input.
		if msg, ok := v.Fields["content"]; ok {
			v.Fields["input"] = msg
		}
	}
	v, verr := c.newRunView(r, v)
	if verr != nil {
		return verr
	}
	return c.renderIn(r, status, "run_new", "runs", v)
}

// startPinned makes a thread pinned to revisionID and posts input to it;
// the thread is new, so the input starts its run at once.
func (c *Console) startPinned(r *wsRequest, agentID, revisionID, input string) (string, error) {
	// The input is checked before a thread is made for it.
	if input == "" {
		return "", apperr.InvalidField("input", "must have 1 to 100000 characters")
	}
	th, err := c.svc.Runs.CreateThread(r.ctx(), r.caller, run.CreateThreadInput{AgentID: agentID, RevisionID: &revisionID})
	if err != nil {
		return "", err
	}
	p, err := c.svc.Runs.PostInput(r.ctx(), r.caller, th.ID, input, run.OnBusyReject)
	if err != nil {
		return "", err
	}
	if p.Run == nil {
		return "", apperr.New(apperr.KindConflict, "the thread has an unfinished run")
	}
	return p.Run.ID, nil
}

// setRetryAfter tells a refused form when to try again, when err was a
// rate limit (status 429).
func setRetryAfter(r *wsRequest, err error, status int) {
	if status != http.StatusTooManyRequests {
		return
	}
	if ae, ok := apperr.As(err); ok {
		r.ec.Response().Header().Set("Retry-After", strconv.Itoa(ae.RetryAfterSeconds()))
	}
}
