package httpapi

import (
	"context"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/timestamp"
)

// ListRunApprovals lists the calls of a run, and of the runs below it,
// that wait for a person's decision.
func (h *RunHandlers) ListRunApprovals(ctx context.Context, req api.ListRunApprovalsRequestObject) (api.ListRunApprovalsResponseObject, error) {
	as, err := h.svc.PendingApprovals(ctx, auth.CallerFrom(ctx), req.RunId)
	if err != nil {
		return nil, err
	}
	return api.ListRunApprovals200JSONResponse{Items: mapAll(as, toAPIApproval)}, nil
}

// DecideRunApproval approves or denies a call that waits for a decision.
func (h *RunHandlers) DecideRunApproval(ctx context.Context, req api.DecideRunApprovalRequestObject) (api.DecideRunApprovalResponseObject, error) {
	b := req.Body
	in := run.DecideInput{CallID: b.CallId, Decision: string(b.Decision)}
	if b.Message != nil {
		in.Message = *b.Message
	}
	a, err := h.svc.DecideApproval(ctx, auth.CallerFrom(ctx), req.RunId, in)
	if err != nil {
		return nil, err
	}
	return api.DecideRunApproval200JSONResponse(toAPIApproval(a)), nil
}

func toAPIApproval(a run.Approval) api.Approval {
	return api.Approval{
		RunId: a.RunID, ThreadId: a.ThreadID, CallId: a.CallID, Name: a.Name, Arguments: a.Arguments,
		Status: api.ApprovalStatus(a.Status), OnTimeout: api.ApprovalOnTimeout(a.OnTimeout),
		Message: nullableString(a.Message), DecidedById: nullableString(a.DecidedByID),
		RequestedAt: timestamp.Of(a.RequestedAt), ExpiresAt: timestamp.Of(a.ExpiresAt), DecidedAt: nullableTime(a.DecidedAt),
	}
}
