package console

import (
	"net/http"
	"strconv"

	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/stream"
)

// threadPage is what a thread's page shows.
type threadPage struct {
	Thread   run.Thread
	Agent    revision.Head
	Messages []run.Message
	// Next is the position to read the conversation on after (the pager's
	// cursor), "" when it is all shown.
	Next string
	Runs []run.Run
	// MoreRuns: the thread has more runs than the page lists.
	MoreRuns bool
}

// threadMessages is a page of a thread's conversation.
const threadMessages = 100

// threadRuns is how many of a thread's runs its page lists.
const threadRuns = 20

// threadView reads what a thread's page shows into v.
func (c *Console) threadView(r *wsRequest, threadID string, v view) (view, error) {
	th, err := c.svc.Runs.GetThread(r.ctx(), r.caller, threadID)
	if err != nil {
		return v, err
	}
	ag, err := c.svc.Agents.Get(r.ctx(), r.caller, th.AgentID)
	if err != nil {
		return v, err
	}
	var after int64
	if cur := r.ec.QueryParam("cursor"); cur != "" {
		// The cursor is a message position; a bad one reads from the start.
		if n, err := strconv.ParseInt(cur, 10, 32); err == nil && n > 0 {
			after = n
		}
	}
	msgs, err := c.svc.Runs.ListMessages(r.ctx(), r.caller, th.ID, int32(after), threadMessages)
	if err != nil {
		return v, err
	}
	limit := threadRuns
	runs, err := c.svc.Runs.ListRuns(r.ctx(), r.caller, run.RunFilter{ThreadID: &th.ID}, &limit, nil)
	if err != nil {
		return v, err
	}
	d := &threadPage{Thread: th, Agent: ag, Messages: msgs, Runs: runs.Items, MoreRuns: runs.NextCursor != nil}
	if len(msgs) == threadMessages {
		d.Next = strconv.Itoa(int(msgs[len(msgs)-1].Position))
	}
	v.Title, v.Data = "Thread "+th.ID, d
	return v, nil
}

// threadPage shows a thread: its conversation, its runs and the form to
// post another input (GET).
func (c *Console) threadPage(r *wsRequest) error {
	v, err := c.threadView(r, r.ec.Param("thread"), view{})
	if err != nil {
		return err
	}
	return c.renderIn(r, http.StatusOK, "thread", "runs", v)
}

// postThreadInput queues an input on the thread (POST): a run it starts at
// once is shown live; an input queued behind an unfinished run is said so
// on the thread's page.
func (c *Console) postThreadInput(r *wsRequest) error {
	threadID := r.ec.Param("thread")
	content := r.form.Get("content")
	p, err := c.svc.Runs.PostInput(r.ctx(), r.caller, threadID, content, run.OnBusyEnqueue)
	if err != nil {
		v := view{Form: map[string]string{"content": content}}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		setRetryAfter(r, err, status)
		v, verr := c.threadView(r, threadID, v)
		if verr != nil {
			return verr
		}
		return c.renderIn(r, status, "thread", "runs", v)
	}
	if p.Run != nil {
		return r.redirect(r.path("runs", p.Run.ID), "The run started.")
	}
	return r.redirect(r.path("runs", "threads", threadID), "The input is queued: it starts when the thread's unfinished run ends.")
}

// streamThread follows the thread's events as Server-Sent Events, the same
// stream as GET /api/v1/threads/{id}/stream, after Last-Event-ID (which a
// reconnecting EventSource sends, and which wins) or ?after (GET).
func (c *Console) streamThread(r *wsRequest) error {
	var after int64
	if s := r.ec.QueryParam("after"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return c.message(r.request, http.StatusNotFound, msgBadStreamPosition(r))
		}
		after = n
	}
	after, ok := stream.ResumeAfter(after, r.ec.Request().Header.Get("Last-Event-ID"))
	if !ok {
		return c.message(r.request, http.StatusNotFound, msgBadStreamPosition(r))
	}
	th, err := c.svc.Runs.GetThread(r.ctx(), r.caller, r.ec.Param("thread"))
	if err != nil {
		return err
	}
	c.svc.Events.ServeSSE(r.ctx(), r.ec.Response(), th.ID, after, c.log)
	return nil
}

// msgBadStreamPosition is the answer to a stream asked to start after
// something that is not an event's sequence number.
func msgBadStreamPosition(r *wsRequest) message {
	return message{"Not found", "A stream resumes after the id of one of its events; this one is not.", r.path("runs"), "Go to the runs"}
}
