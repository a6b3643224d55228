package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/stream"
)

// StreamThread answers a thread's events as Server-Sent Events, after
// Last-Event-ID (which wins) or ?after.
func (h *RunHandlers) StreamThread(ctx context.Context, req api.StreamThreadRequestObject) (api.StreamThreadResponseObject, error) {
	var after int64
	if req.Params.After != nil {
		after = *req.Params.After
	}
	var last string
	if v := req.Params.LastEventID; v != nil {
		last = *v
	}
	after, ok := stream.ResumeAfter(after, last)
	if !ok {
		return nil, apperr.InvalidField("Last-Event-ID", "must be the id (a sequence number) of an event of the stream")
	}
	th, err := h.svc.GetThread(ctx, auth.CallerFrom(ctx), req.ThreadId)
	if err != nil {
		return nil, err
	}
	return &sseResponse{ctx: ctx, hub: h.hub, threadID: th.ID, after: after, log: h.log}, nil
}

// sseResponse writes a thread's stream straight to the connection
// (stream.Hub.ServeSSE).
type sseResponse struct {
	ctx      context.Context
	hub      *stream.Hub
	threadID string
	after    int64
	log      *slog.Logger
}

// VisitStreamThreadResponse implements api.StreamThreadResponseObject.
func (s *sseResponse) VisitStreamThreadResponse(w http.ResponseWriter) error {
	s.hub.ServeSSE(s.ctx, w, s.threadID, s.after, s.log)
	return nil
}
