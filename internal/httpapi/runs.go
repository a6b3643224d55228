package httpapi

import (
	"context"
	"log/slog"

	"github.com/oapi-codegen/nullable"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/stream"
	"github.com/svcdev/svc/internal/timestamp"
)

// RunHandlers implements /api/v1/threads and /api/v1/runs: threads, their
// inputs, messages, events and streams, and runs with their attempts.
type RunHandlers struct {
	svc *run.Service
	hub *stream.Hub
	log *slog.Logger
}

// ListRuns lists the workspace's runs, newest first.
func (h *RunHandlers) ListRuns(ctx context.Context, req api.ListRunsRequestObject) (api.ListRunsResponseObject, error) {
	p := req.Params
	var status *string
	if p.Status != nil {
		s := string(*p.Status)
		status = &s
	}
	page, err := h.svc.ListRuns(ctx, auth.CallerFrom(ctx), run.RunFilter{ThreadID: p.ThreadId, AgentID: p.AgentId, Status: status, CreatedAfter: timestamp.StdPtr(p.CreatedAfter)}, p.Limit, p.Cursor)
	if err != nil {
		return nil, err
	}
	return api.ListRuns200JSONResponse{Items: mapAll(page.Items, toAPIRun), NextCursor: nullableString(page.NextCursor)}, nil
}

// StartRun queues an input and starts its run, on a new thread or an idle one.
func (h *RunHandlers) StartRun(ctx context.Context, req api.StartRunRequestObject) (api.StartRunResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	r, err := h.svc.Start(ctx, auth.CallerFrom(ctx), run.StartInput{AgentID: b.AgentId, Input: b.Input, ThreadID: b.ThreadId})
	if err != nil {
		return nil, err
	}
	loc := "/api/v1/runs/" + r.ID
	return api.StartRun202JSONResponse{Body: toAPIRun(r), Headers: api.StartRun202ResponseHeaders{Location: &loc}}, nil
}

// GetRun reads a run.
func (h *RunHandlers) GetRun(ctx context.Context, req api.GetRunRequestObject) (api.GetRunResponseObject, error) {
	r, err := h.svc.GetRun(ctx, auth.CallerFrom(ctx), req.RunId)
	if err != nil {
		return nil, err
	}
	return api.GetRun200JSONResponse(toAPIRun(r)), nil
}

// ListRunAttempts lists a run's attempts, first first.
func (h *RunHandlers) ListRunAttempts(ctx context.Context, req api.ListRunAttemptsRequestObject) (api.ListRunAttemptsResponseObject, error) {
	atts, err := h.svc.ListAttempts(ctx, auth.CallerFrom(ctx), req.RunId)
	if err != nil {
		return nil, err
	}
	return api.ListRunAttempts200JSONResponse{Items: mapAll(atts, toAPIAttempt)}, nil
}

// CancelRun cancels a run, or asks its worker to.
func (h *RunHandlers) CancelRun(ctx context.Context, req api.CancelRunRequestObject) (api.CancelRunResponseObject, error) {
	r, err := h.svc.Cancel(ctx, auth.CallerFrom(ctx), req.RunId)
	if err != nil {
		return nil, err
	}
	return api.CancelRun202JSONResponse(toAPIRun(r)), nil
}

func toAPIRun(r run.Run) api.Run {
	out := api.Run{
		Id: r.ID, ThreadId: r.ThreadID, AgentId: r.AgentID, RevisionId: r.RevisionID, Status: api.RunStatus(r.Status),
		AttemptsUsed: int(r.AttemptsUsed), MaxAttempts: int(r.MaxAttempts), Error: nullable.NewNullNullable[api.RunError](),
		Usage:     api.RunUsage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens},
		CreatedAt: timestamp.Of(r.CreatedAt), StartedAt: nullableTime(r.StartedAt), FinishedAt: nullableTime(r.FinishedAt),
		Model: r.ModelKey, InputId: nullableString(r.InputID), ParentRunId: nullableString(r.ParentRunID),
		CancelRequestedAt: nullableTime(r.CancelRequestedAt), SkillRevisions: make([]api.SkillRevisionPin, 0, len(r.SkillRevisions)),
	}
	if r.Error != nil {
		out.Error = nullable.NewNullableWithValue(api.RunError{Code: r.Error.Code, Message: r.Error.Message})
	}
	for _, s := range r.SkillRevisions {
		out.SkillRevisions = append(out.SkillRevisions, api.SkillRevisionPin{SkillId: s.SkillID, RevisionId: s.RevisionID})
	}
	return out
}

func toAPIAttempt(a run.Attempt) api.Attempt {
	out := api.Attempt{
		Id: a.ID, RunId: a.RunID, Number: int(a.Number), Worker: a.Worker, Status: api.AttemptStatus(a.Status),
		Charged: a.Charged, FromStep: int(a.FromStep), ToStep: nullable.NewNullNullable[int](), Error: nullableString(a.Error),
		StartedAt: timestamp.Of(a.StartedAt), EndedAt: nullableTime(a.EndedAt),
	}
	if a.ToStep != nil {
		out.ToStep = nullable.NewNullableWithValue(int(*a.ToStep))
	}
	return out
}
