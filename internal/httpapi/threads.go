package httpapi

import (
	"context"
	"encoding/json"

	"github.com/oapi-codegen/nullable"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/resource"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/timestamp"
)

// Page sizes of a thread's events.
const (
	defaultEventsPage = 100
)

// ListThreads lists the workspace's threads, newest first.
func (h *RunHandlers) ListThreads(ctx context.Context, req api.ListThreadsRequestObject) (api.ListThreadsResponseObject, error) {
	page, err := h.svc.ListThreads(ctx, auth.CallerFrom(ctx), req.Params.AgentId, req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	return api.ListThreads200JSONResponse{Items: mapAll(page.Items, toAPIThread), NextCursor: nullableString(page.NextCursor)}, nil
}

// CreateThread creates a thread with an agent.
func (h *RunHandlers) CreateThread(ctx context.Context, req api.CreateThreadRequestObject) (api.CreateThreadResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	var meta map[string]any
	if b.Metadata != nil {
		meta = *b.Metadata
	}
	th, err := h.svc.CreateThread(ctx, auth.CallerFrom(ctx), run.CreateThreadInput{AgentID: b.AgentId, RevisionID: b.RevisionId, Metadata: meta})
	if err != nil {
		return nil, err
	}
	loc := "/api/v1/threads/" + th.ID
	return api.CreateThread201JSONResponse{Body: toAPIThread(th), Headers: api.CreateThread201ResponseHeaders{Location: &loc}}, nil
}

// GetThread reads a thread.
func (h *RunHandlers) GetThread(ctx context.Context, req api.GetThreadRequestObject) (api.GetThreadResponseObject, error) {
	th, err := h.svc.GetThread(ctx, auth.CallerFrom(ctx), req.ThreadId)
	if err != nil {
		return nil, err
	}
	return api.GetThread200JSONResponse(toAPIThread(th)), nil
}

// PostThreadInput queues an input; on an idle thread it starts a run at once.
func (h *RunHandlers) PostThreadInput(ctx context.Context, req api.PostThreadInputRequestObject) (api.PostThreadInputResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	var onBusy string
	if b.OnBusy != nil {
		onBusy = string(*b.OnBusy)
	}
	p, err := h.svc.PostInput(ctx, auth.CallerFrom(ctx), req.ThreadId, b.Content, onBusy)
	if err != nil {
		return nil, err
	}
	out := api.PostThreadInput202JSONResponse{Input: toAPIInput(p.Input), Run: nullable.NewNullNullable[api.Run]()}
	if p.Run != nil {
		out.Run = nullable.NewNullableWithValue(toAPIRun(*p.Run))
	}
	return out, nil
}

// ListThreadMessages reads a thread's messages after a position, oldest first.
func (h *RunHandlers) ListThreadMessages(ctx context.Context, req api.ListThreadMessagesRequestObject) (api.ListThreadMessagesResponseObject, error) {
	after := 0
	if req.Params.After != nil {
		after = *req.Params.After
	}
	limit := resource.Limit(req.Params.Limit)
	msgs, err := h.svc.ListMessages(ctx, auth.CallerFrom(ctx), req.ThreadId, int32(after), limit)
	if err != nil {
		return nil, err
	}
	out := api.ListThreadMessages200JSONResponse{Items: mapAll(msgs, toAPIMessage), NextAfter: nullable.NewNullNullable[int]()}
	if len(msgs) == limit {
		out.NextAfter = nullable.NewNullableWithValue(int(msgs[len(msgs)-1].Position))
	}
	return out, nil
}

// ListThreadEvents reads a thread's events after a sequence number, oldest first.
func (h *RunHandlers) ListThreadEvents(ctx context.Context, req api.ListThreadEventsRequestObject) (api.ListThreadEventsResponseObject, error) {
	var after int64
	if req.Params.After != nil {
		after = *req.Params.After
	}
	limit := defaultEventsPage
	if req.Params.Limit != nil {
		limit = min(max(*req.Params.Limit, 1), run.MaxEventsPage)
	}
	evs, err := h.svc.Events(ctx, auth.CallerFrom(ctx), req.ThreadId, after, limit)
	if err != nil {
		return nil, err
	}
	items := make([]api.Event, 0, len(evs))
	for _, e := range evs {
		v, err := toAPIEvent(e)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
	out := api.ListThreadEvents200JSONResponse{Items: items, NextAfter: nullable.NewNullNullable[int64]()}
	if len(evs) == limit {
		out.NextAfter = nullable.NewNullableWithValue(evs[len(evs)-1].Seq)
	}
	return out, nil
}

func toAPIThread(t run.Thread) api.Thread {
	return api.Thread{
		Id: t.ID, AgentId: t.AgentID, RevisionId: nullableString(t.RevisionID), Metadata: t.Metadata,
		Status: api.ThreadStatus(t.Status()), ActiveRunId: nullableString(t.ActiveRunID), EnvironmentId: nullableString(t.EnvironmentID),
		LastSeq: t.LastSeq, CreatedById: t.CreatedByID, CreatedAt: timestamp.Of(t.CreatedAt), UpdatedAt: timestamp.Of(t.UpdatedAt),
	}
}

func toAPIInput(in run.Input) api.Input {
	return api.Input{
		Id: in.ID, ThreadId: in.ThreadID, Content: in.Content, Status: api.InputStatus(in.Status), RunId: nullableString(in.RunID),
		CreatedAt: timestamp.Of(in.CreatedAt), StartedAt: nullableTime(in.StartedAt),
	}
}

func toAPIMessage(m run.Message) api.Message {
	calls := make([]api.ToolCall, 0, len(m.ToolCalls))
	for _, c := range m.ToolCalls {
		calls = append(calls, api.ToolCall{Id: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return api.Message{
		Position: int(m.Position), RunId: nullableString(m.RunID), Role: api.MessageRole(m.Role), Content: m.Content,
		ToolCalls: calls, ToolCallId: nullableString(m.ToolCallID), IsError: m.IsError, CreatedAt: timestamp.Of(m.CreatedAt),
	}
}

// toAPIEvent answers e as the stream sends it: one encoding of an event
// (run.Event's MarshalJSON) serves the list and the stream.
func toAPIEvent(e run.Event) (api.Event, error) {
	b, err := json.Marshal(e)
	if err == nil {
		var v api.Event
		if err = v.UnmarshalJSON(b); err == nil {
			return v, nil
		}
	}
	return api.Event{}, apperr.Wrap(apperr.KindInternal, "internal error", err)
}
