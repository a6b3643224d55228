package httpapi

import (
	"context"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/timestamp"
)

// AgentHandlers implements /api/v1/agents and its sub-resources.
type AgentHandlers struct {
	svc *agent.Service
}

// ListAgents lists the agents of the key's workspace, newest first.
func (h *AgentHandlers) ListAgents(ctx context.Context, req api.ListAgentsRequestObject) (api.ListAgentsResponseObject, error) {
	p := req.Params
	page, err := h.svc.List(ctx, auth.CallerFrom(ctx), revision.ListInput{
		Labels: labelSelectors(p.Label), Q: p.Q, Archived: p.Archived, Limit: p.Limit, Cursor: p.Cursor,
	})
	if err != nil {
		return nil, err
	}
	return api.ListAgents200JSONResponse{Items: mapAll(page.Items, toAPIAgent), NextCursor: nullableString(page.NextCursor)}, nil
}

// CreateAgent creates an agent with its revision 1.
func (h *AgentHandlers) CreateAgent(ctx context.Context, req api.CreateAgentRequestObject) (api.CreateAgentResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	cfg, err := configJSON(b.Config)
	if err != nil {
		return nil, err
	}
	a, err := h.svc.Create(ctx, auth.CallerFrom(ctx), revision.CreateInput{
		Name: b.Name, Description: descriptionIn(b.Description), Labels: labelsIn(b.Labels), Config: cfg,
	})
	if err != nil {
		return nil, err
	}
	etag, loc := a.ETag(), "/api/v1/agents/"+a.ID
	return api.CreateAgent201JSONResponse{Body: toAPIAgent(a), Headers: api.CreateAgent201ResponseHeaders{ETag: &etag, Location: &loc}}, nil
}

// GetAgent reads an agent.
func (h *AgentHandlers) GetAgent(ctx context.Context, req api.GetAgentRequestObject) (api.GetAgentResponseObject, error) {
	a, err := h.svc.Get(ctx, auth.CallerFrom(ctx), req.AgentId)
	if err != nil {
		return nil, err
	}
	etag := a.ETag()
	return api.GetAgent200JSONResponse{Body: toAPIAgent(a), Headers: api.GetAgent200ResponseHeaders{ETag: &etag}}, nil
}

// UpdateAgent changes an agent's head.
func (h *AgentHandlers) UpdateAgent(ctx context.Context, req api.UpdateAgentRequestObject) (api.UpdateAgentResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	a, err := h.svc.Update(ctx, auth.CallerFrom(ctx), revision.UpdateInput{
		ID: req.AgentId, IfMatch: &req.Params.IfMatch, Name: b.Name, Description: descriptionIn(b.Description),
		Labels: labelsIn(b.Labels), DefaultRevisionID: b.DefaultRevisionId,
	})
	if err != nil {
		return nil, err
	}
	etag := a.ETag()
	return api.UpdateAgent200JSONResponse{Body: toAPIAgent(a), Headers: api.UpdateAgent200ResponseHeaders{ETag: &etag}}, nil
}

// ArchiveAgent archives an agent.
func (h *AgentHandlers) ArchiveAgent(ctx context.Context, req api.ArchiveAgentRequestObject) (api.ArchiveAgentResponseObject, error) {
	a, err := h.svc.Archive(ctx, auth.CallerFrom(ctx), req.AgentId, &req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	etag := a.ETag()
	return api.ArchiveAgent200JSONResponse{Body: toAPIAgent(a), Headers: api.ArchiveAgent200ResponseHeaders{ETag: &etag}}, nil
}

// UnarchiveAgent makes an archived agent active again.
func (h *AgentHandlers) UnarchiveAgent(ctx context.Context, req api.UnarchiveAgentRequestObject) (api.UnarchiveAgentResponseObject, error) {
	a, err := h.svc.Unarchive(ctx, auth.CallerFrom(ctx), req.AgentId, &req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	etag := a.ETag()
	return api.UnarchiveAgent200JSONResponse{Body: toAPIAgent(a), Headers: api.UnarchiveAgent200ResponseHeaders{ETag: &etag}}, nil
}

// ListAgentRevisions lists an agent's revisions, newest first.
func (h *AgentHandlers) ListAgentRevisions(ctx context.Context, req api.ListAgentRevisionsRequestObject) (api.ListAgentRevisionsResponseObject, error) {
	page, err := h.svc.ListRevisions(ctx, auth.CallerFrom(ctx), req.AgentId, req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	items := make([]api.AgentRevision, 0, len(page.Items))
	for _, r := range page.Items {
		v, err := toAPIAgentRevision(r)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
	return api.ListAgentRevisions200JSONResponse{Items: items, NextCursor: nullableString(page.NextCursor)}, nil
}

// PublishAgentRevision publishes a revision (or answers the identical default).
func (h *AgentHandlers) PublishAgentRevision(ctx context.Context, req api.PublishAgentRevisionRequestObject) (api.PublishAgentRevisionResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	cfg, err := configJSON(b.Config)
	if err != nil {
		return nil, err
	}
	p, err := h.svc.Publish(ctx, auth.CallerFrom(ctx), revision.PublishInput{HeadID: req.AgentId, Config: cfg, MakeDefault: b.MakeDefault})
	if err != nil {
		return nil, err
	}
	v, err := toAPIAgentRevision(p.Revision)
	if err != nil {
		return nil, err
	}
	loc := "/api/v1/agents/" + p.Revision.HeadID + "/revisions/" + p.Revision.ID
	return api.PublishAgentRevision201JSONResponse{Body: v, Headers: api.PublishAgentRevision201ResponseHeaders{Location: &loc}}, nil
}

// GetAgentRevision reads one revision of an agent.
func (h *AgentHandlers) GetAgentRevision(ctx context.Context, req api.GetAgentRevisionRequestObject) (api.GetAgentRevisionResponseObject, error) {
	r, err := h.svc.GetRevision(ctx, auth.CallerFrom(ctx), req.AgentId, req.RevisionId)
	if err != nil {
		return nil, err
	}
	v, err := toAPIAgentRevision(r)
	if err != nil {
		return nil, err
	}
	return api.GetAgentRevision200JSONResponse(v), nil
}

// toAPIAgent is an agent's head (toAPISkill converts it to a skill's).
func toAPIAgent(a revision.Head) api.Agent {
	return api.Agent{
		Id: a.ID, Name: a.Name, Description: a.Description, Labels: a.Labels, DefaultRevisionId: a.DefaultRevisionID,
		LatestRevisionNumber: int(a.LatestRevisionNumber), Archived: a.Archived(), ArchivedAt: nullableTime(a.ArchivedAt),
		Version: int(a.Version), CreatedById: a.CreatedByID, UpdatedById: a.UpdatedByID, CreatedAt: timestamp.Of(a.CreatedAt), UpdatedAt: timestamp.Of(a.UpdatedAt),
	}
}

func toAPIAgentRevision(r agent.Revision) (api.AgentRevision, error) {
	cfg, err := viewJSON[api.AgentConfig](r.Config)
	if err != nil {
		return api.AgentRevision{}, err
	}
	return api.AgentRevision{
		Id: r.ID, AgentId: r.HeadID, Number: int(r.Number), Config: cfg, ContentHash: r.ContentHash,
		CreatedById: r.CreatedByID, CreatedAt: timestamp.Of(r.CreatedAt),
	}, nil
}
