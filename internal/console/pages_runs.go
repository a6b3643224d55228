package console

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
)

// runsRoutes are the Runs section: the runs of the workspace, one run with
// its attempts and its live timeline, threads with their conversation, and
// the playground that starts a run (decision 0050).
func (c *Console) runsRoutes() []route {
	return []route{
		{Method: http.MethodGet, Path: "/runs", Twin: "listRuns", Handle: c.runs},
		{Method: http.MethodGet, Path: "/runs/new", Twin: "startRun", Handle: c.newRunForm},
		{Method: http.MethodPost, Path: "/runs/new", Twin: "startRun", Handle: c.startRun},
		{Method: http.MethodGet, Path: "/runs/:run", Twin: "getRun", Handle: c.runPage},
		{Method: http.MethodPost, Path: "/runs/:run/cancel", Twin: "cancelRun", Handle: c.cancelRun},
		{Method: http.MethodPost, Path: "/runs/:run/approvals", Twin: "decideRunApproval", Handle: c.decideApproval},
		{Method: http.MethodGet, Path: "/runs/approvals", Twin: "listRunApprovals", Handle: c.approvalsInbox},
		{Method: http.MethodGet, Path: "/runs/threads/:thread", Twin: "getThread", Handle: c.threadPage},
		{Method: http.MethodPost, Path: "/runs/threads/:thread/inputs", Twin: "postThreadInput", Handle: c.postThreadInput},
		{Method: http.MethodGet, Path: "/runs/threads/:thread/stream", Twin: "streamThread", Handle: c.streamThread},
	}
}

// runStatuses are the statuses a run list can be filtered by, as the
// contract's RunStatus lists them.
var runStatuses = []string{
	string(run.StatusAccepted), string(run.StatusRunning), string(run.StatusWaiting), string(run.StatusSucceeded),
	string(run.StatusFailed), string(run.StatusCancelled),
}

// runsPage is what the runs list shows.
type runsPage struct {
	Runs []run.Run
	Next string
	// Agents are the workspace's agents, for the filter and the agents'
	// names in the list.
	Agents   []revision.Head
	Names    map[string]string
	Statuses []string
}

// agentHeads lists the workspace's agents (the first 200, newest first),
// only those not archived when active is set.
func (c *Console) agentHeads(r *wsRequest, active bool) ([]revision.Head, error) {
	limit := 200
	in := revision.ListInput{Limit: &limit}
	if active {
		no := false
		in.Archived = &no
	}
	page, err := c.svc.Agents.List(r.ctx(), r.caller, in)
	if err != nil {
		return nil, err
	}
	return page.Items, nil
}

// agentNames maps agent ids to names.
func agentNames(heads []revision.Head) map[string]string {
	out := make(map[string]string, len(heads))
	for _, h := range heads {
		out[h.ID] = h.Name
	}
	return out
}

// runs lists the workspace's runs, newest first, filtered by agent, status
// and the day they were created from (GET).
func (c *Console) runs(r *wsRequest) error {
	q := r.ec.QueryParams()
	v := view{Title: "Runs", Form: map[string]string{"agent": q.Get("agent"), "status": q.Get("status"), "since": q.Get("since")}, Fields: map[string]string{}}
	var f run.RunFilter
	if a := strings.TrimSpace(v.Form["agent"]); a != "" {
		f.AgentID = &a
	}
	if s := v.Form["status"]; s != "" {
		if slices.Contains(runStatuses, s) {
			f.Status = &s
		} else {
			v.Fields["status"] = "not a status of runs"
		}
	}
	if s := strings.TrimSpace(v.Form["since"]); s != "" {
		if day, err := time.Parse(time.DateOnly, s); err == nil {
			// From the start of that day, UTC.
			from := day.Add(-time.Nanosecond)
			f.CreatedAfter = &from
		} else {
			v.Fields["since"] = "must be a date"
		}
	}
	var cursor *string
	if cur := q.Get("cursor"); cur != "" {
		cursor = &cur
	}
	heads, err := c.agentHeads(r, false)
	if err != nil {
		return err
	}
	d := &runsPage{Agents: heads, Names: agentNames(heads), Statuses: runStatuses}
	v.Data = d
	if len(v.Fields) > 0 {
		// A hand-made address: say what is wrong and list nothing.
		v.Error = "Check the filters marked below."
		return c.renderIn(r, http.StatusOK, "runs", "runs", v)
	}
	page, err := c.svc.Runs.ListRuns(r.ctx(), r.caller, f, nil, cursor)
	if ae, ok := apperr.As(err); ok && (ae.Kind == apperr.KindNotFound || ae.Kind == apperr.KindInvalidArgument) {
		// An agent that is not in the workspace, or a stale cursor.
		v.Error = sentence(ae.Msg)
		for _, dt := range ae.Details {
			if dt.Field == "agent_id" {
				v.Fields["agent"] = dt.Reason
			}
		}
		return c.renderIn(r, http.StatusOK, "runs", "runs", v)
	}
	if err != nil {
		return err
	}
	d.Runs = page.Items
	d.Next = nextCursor(page.NextCursor)
	return c.renderIn(r, http.StatusOK, "runs", "runs", v)
}

// runPage is what a run's page shows.
type runPage struct {
	Run      run.Run
	Agent    revision.Head
	Attempts []run.Attempt
	Timeline []timelineEntry
	// Truncated: the thread has more events than the page reads.
	Truncated bool
	// Live is the URL of the thread's stream after the last event shown,
	// while the run is not finished ("" once it is).
	Live string
	// Pending are the tool calls of the run (and of runs below it) that
	// wait for a person's decision.
	Pending []run.Approval
}

// Finished reports whether the run ended.
func (p *runPage) Finished() bool { return p.Run.Status.Finished() }

// timelineEntry is one event of a run's timeline; consecutive text deltas
// are one entry holding their text, as the live page shows them.
type timelineEntry struct {
	Seq     int64
	LastSeq int64
	Type    string
	At      time.Time
	Data    json.RawMessage
	// Deltas counts the text deltas of a message.delta entry; Text is their
	// text.
	Deltas int
	Text   string

	Status   *run.RunStatusData
	Message  *run.MessageData
	Call     *run.ToolCallData
	Result   *run.ToolResultData
	Problem  *run.ErrorData
	Asked    *run.ApprovalRequestedData
	Decided  *run.ApprovalDecidedData
	Unparsed bool
}

// timelineEvents is the most events of a thread a run's page reads.
const timelineEvents = 5 * run.MaxEventsPage

// runTimeline reads the events of the run's thread and keeps the run's.
// Once the run's events are behind (another run's follow), it stops. It
// returns the entries, the last sequence number read and whether the
// thread has more events than it read.
func (c *Console) runTimeline(r *wsRequest, rn run.Run) ([]timelineEntry, int64, bool, error) {
	var out []timelineEntry
	var last int64
	seen := false
	for read := 0; read < timelineEvents; {
		evs, err := c.svc.Runs.Events(r.ctx(), r.caller, rn.ThreadID, last, run.MaxEventsPage)
		if err != nil {
			return nil, 0, false, err
		}
		for _, e := range evs {
			last = e.Seq
			if e.RunID == nil || *e.RunID != rn.ID {
				if seen {
					return out, last, false, nil
				}
				continue
			}
			seen = true
			out = appendEntry(out, e)
		}
		read += len(evs)
		if len(evs) < run.MaxEventsPage {
			return out, last, false, nil
		}
	}
	return out, last, true, nil
}

// appendEntry adds event e to a timeline.
func appendEntry(out []timelineEntry, e run.Event) []timelineEntry {
	if e.Type == run.EventMessageDelta {
		var d run.DeltaData
		_ = json.Unmarshal(e.Data, &d)
		if n := len(out); n > 0 && out[n-1].Type == run.EventMessageDelta {
			out[n-1].LastSeq, out[n-1].Deltas, out[n-1].Text = e.Seq, out[n-1].Deltas+1, out[n-1].Text+d.Text
			return out
		}
		return append(out, timelineEntry{Seq: e.Seq, LastSeq: e.Seq, Type: e.Type, At: e.At, Data: e.Data, Deltas: 1, Text: d.Text})
	}
	t := timelineEntry{Seq: e.Seq, LastSeq: e.Seq, Type: e.Type, At: e.At, Data: e.Data}
	var err error
	switch e.Type {
	case run.EventRunStatus:
		t.Status, err = decodeData[run.RunStatusData](e.Data)
	case run.EventMessageCompleted:
		t.Message, err = decodeData[run.MessageData](e.Data)
	case run.EventToolCall:
		t.Call, err = decodeData[run.ToolCallData](e.Data)
	case run.EventToolResult:
		t.Result, err = decodeData[run.ToolResultData](e.Data)
	case run.EventError:
		t.Problem, err = decodeData[run.ErrorData](e.Data)
	case run.EventApprovalRequested:
		t.Asked, err = decodeData[run.ApprovalRequestedData](e.Data)
	case run.EventApprovalDecided:
		t.Decided, err = decodeData[run.ApprovalDecidedData](e.Data)
	default:
		t.Unparsed = true
	}
	if err != nil {
		t.Status, t.Message, t.Call, t.Result, t.Problem, t.Unparsed = nil, nil, nil, nil, nil, true
	}
	return append(out, t)
}

// runView reads what a run's page shows into v.
func (c *Console) runView(r *wsRequest, runID string, v view) (view, error) {
	rn, err := c.svc.Runs.GetRun(r.ctx(), r.caller, runID)
	if err != nil {
		return v, err
	}
	ag, err := c.svc.Agents.Get(r.ctx(), r.caller, rn.AgentID)
	if err != nil {
		return v, err
	}
	atts, err := c.svc.Runs.ListAttempts(r.ctx(), r.caller, rn.ID)
	if err != nil {
		return v, err
	}
	tl, last, more, err := c.runTimeline(r, rn)
	if err != nil {
		return v, err
	}
	d := &runPage{Run: rn, Agent: ag, Attempts: atts, Timeline: tl, Truncated: more}
	if rn.Status == run.StatusWaiting {
		if d.Pending, err = c.svc.Runs.PendingApprovals(r.ctx(), r.caller, rn.ID); err != nil {
			return v, err
		}
	}
	if !rn.Status.Finished() {
		d.Live = r.path("runs", "threads", rn.ThreadID, "stream") + "?after=" + strconv.FormatInt(last, 10)
	}
	v.Title, v.Data = "Run "+rn.ID, d
	return v, nil
}

// runPage shows a run: its status, pins, usage, attempts and timeline (GET).
func (c *Console) runPage(r *wsRequest) error {
	v, err := c.runView(r, r.ec.Param("run"), view{})
	if err != nil {
		return err
	}
	return c.renderIn(r, http.StatusOK, "run", "runs", v)
}

// cancelRun cancels a run, or asks its worker to (POST).
func (c *Console) cancelRun(r *wsRequest) error {
	rn, err := c.svc.Runs.Cancel(r.ctx(), r.caller, r.ec.Param("run"))
	if err != nil {
		return c.runRefused(r, view{}, err)
	}
	notice := "The run is cancelled."
	if !rn.Status.Finished() {
		notice = "The run was asked to stop: its worker ends it as cancelled within moments."
	}
	return r.redirect(r.path("runs", rn.ID), notice)
}

// runRefused shows the run's page again with what the service refused of
// an action on it (err); a failure no form explains is returned as it is.
func (c *Console) runRefused(r *wsRequest, v view, err error) error {
	status, ok := formError(&v, err)
	if !ok {
		return err
	}
	v, verr := c.runView(r, r.ec.Param("run"), v)
	if verr != nil {
		return verr
	}
	return c.renderIn(r, status, "run", "runs", v)
}

// decideApproval approves or denies a tool call a run waits on (POST): the
// run continues from its checkpoint, running the call or telling the model
// it was denied and why.
func (c *Console) decideApproval(r *wsRequest) error {
	in := run.DecideInput{CallID: r.form.Get("call_id"), Decision: r.form.Get("decision"), Message: strings.TrimSpace(r.form.Get("message"))}
	a, err := c.svc.Runs.DecideApproval(r.ctx(), r.caller, r.ec.Param("run"), in)
	if err != nil {
		return c.runRefused(r, view{Form: map[string]string{"message": in.Message}}, err)
	}
	notice := "The call " + a.Name + " is approved: the run goes on and runs it."
	if in.Decision == run.DecisionDeny {
		notice = "The call " + a.Name + " is denied: the run goes on and the model is told why."
	}
	back := r.form.Get("back")
	if back != "inbox" {
		return r.redirect(r.path("runs", r.ec.Param("run")), notice)
	}
	return r.redirect(r.path("runs", "approvals"), notice)
}

// approvalsPage is what the approvals inbox shows.
type approvalsPage struct {
	Runs []run.WaitingRun
	Next string
}

// approvalsInbox lists the runs that wait for a person's decision on a
// tool call, newest first, with their calls (GET).
func (c *Console) approvalsInbox(r *wsRequest) error {
	v := view{Title: "Waiting for approval"}
	cursor := r.cursor()
	page, err := c.svc.Runs.ListWaiting(r.ctx(), r.caller, nil, cursor)
	if err != nil {
		if _, ok := formError(&v, err); !ok {
			return err
		}
	}
	d := &approvalsPage{Runs: page.Items}
	d.Next = nextCursor(page.NextCursor)
	v.Data = d
	return c.renderIn(r, http.StatusOK, "approvals", "runs", v)
}

// decodeData decodes an event's data as a T.
func decodeData[T any](data json.RawMessage) (*T, error) {
	v := new(T)
	return v, json.Unmarshal(data, v)
}
