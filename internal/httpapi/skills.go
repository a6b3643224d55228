package httpapi

import (
	"context"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/timestamp"
)

// SkillHandlers implements /api/v1/skills and its sub-resources.
type SkillHandlers struct {
	svc *skill.Service
}

// ListSkills lists the skills of the key's workspace, newest first.
func (h *SkillHandlers) ListSkills(ctx context.Context, req api.ListSkillsRequestObject) (api.ListSkillsResponseObject, error) {
	p := req.Params
	page, err := h.svc.List(ctx, auth.CallerFrom(ctx), revision.ListInput{
		Labels: labelSelectors(p.Label), Q: p.Q, Archived: p.Archived, Limit: p.Limit, Cursor: p.Cursor,
	})
	if err != nil {
		return nil, err
	}
	return api.ListSkills200JSONResponse{Items: mapAll(page.Items, toAPISkill), NextCursor: nullableString(page.NextCursor)}, nil
}

// CreateSkill creates a skill with its revision 1.
func (h *SkillHandlers) CreateSkill(ctx context.Context, req api.CreateSkillRequestObject) (api.CreateSkillResponseObject, error) {
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
	etag, loc := a.ETag(), "/api/v1/skills/"+a.ID
	return api.CreateSkill201JSONResponse{Body: toAPISkill(a), Headers: api.CreateSkill201ResponseHeaders{ETag: &etag, Location: &loc}}, nil
}

// GetSkill reads a skill.
func (h *SkillHandlers) GetSkill(ctx context.Context, req api.GetSkillRequestObject) (api.GetSkillResponseObject, error) {
	a, err := h.svc.Get(ctx, auth.CallerFrom(ctx), req.SkillId)
	if err != nil {
		return nil, err
	}
	etag := a.ETag()
	return api.GetSkill200JSONResponse{Body: toAPISkill(a), Headers: api.GetSkill200ResponseHeaders{ETag: &etag}}, nil
}

// UpdateSkill changes a skill's head.
func (h *SkillHandlers) UpdateSkill(ctx context.Context, req api.UpdateSkillRequestObject) (api.UpdateSkillResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	a, err := h.svc.Update(ctx, auth.CallerFrom(ctx), revision.UpdateInput{
		ID: req.SkillId, IfMatch: &req.Params.IfMatch, Name: b.Name, Description: descriptionIn(b.Description),
		Labels: labelsIn(b.Labels), DefaultRevisionID: b.DefaultRevisionId,
	})
	if err != nil {
		return nil, err
	}
	etag := a.ETag()
	return api.UpdateSkill200JSONResponse{Body: toAPISkill(a), Headers: api.UpdateSkill200ResponseHeaders{ETag: &etag}}, nil
}

// ArchiveSkill archives a skill.
func (h *SkillHandlers) ArchiveSkill(ctx context.Context, req api.ArchiveSkillRequestObject) (api.ArchiveSkillResponseObject, error) {
	a, err := h.svc.Archive(ctx, auth.CallerFrom(ctx), req.SkillId, &req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	etag := a.ETag()
	return api.ArchiveSkill200JSONResponse{Body: toAPISkill(a), Headers: api.ArchiveSkill200ResponseHeaders{ETag: &etag}}, nil
}

// UnarchiveSkill makes an archived skill active again.
func (h *SkillHandlers) UnarchiveSkill(ctx context.Context, req api.UnarchiveSkillRequestObject) (api.UnarchiveSkillResponseObject, error) {
	a, err := h.svc.Unarchive(ctx, auth.CallerFrom(ctx), req.SkillId, &req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	etag := a.ETag()
	return api.UnarchiveSkill200JSONResponse{Body: toAPISkill(a), Headers: api.UnarchiveSkill200ResponseHeaders{ETag: &etag}}, nil
}

// ListSkillRevisions lists a skill's revisions, newest first.
func (h *SkillHandlers) ListSkillRevisions(ctx context.Context, req api.ListSkillRevisionsRequestObject) (api.ListSkillRevisionsResponseObject, error) {
	page, err := h.svc.ListRevisions(ctx, auth.CallerFrom(ctx), req.SkillId, req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	items := make([]api.SkillRevision, 0, len(page.Items))
	for _, r := range page.Items {
		v, err := toAPISkillRevision(r)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
	return api.ListSkillRevisions200JSONResponse{Items: items, NextCursor: nullableString(page.NextCursor)}, nil
}

// PublishSkillRevision publishes a revision (or answers the identical default).
func (h *SkillHandlers) PublishSkillRevision(ctx context.Context, req api.PublishSkillRevisionRequestObject) (api.PublishSkillRevisionResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	cfg, err := configJSON(b.Config)
	if err != nil {
		return nil, err
	}
	p, err := h.svc.Publish(ctx, auth.CallerFrom(ctx), revision.PublishInput{HeadID: req.SkillId, Config: cfg, MakeDefault: b.MakeDefault})
	if err != nil {
		return nil, err
	}
	v, err := toAPISkillRevision(p.Revision)
	if err != nil {
		return nil, err
	}
	loc := "/api/v1/skills/" + p.Revision.HeadID + "/revisions/" + p.Revision.ID
	return api.PublishSkillRevision201JSONResponse{Body: v, Headers: api.PublishSkillRevision201ResponseHeaders{Location: &loc}}, nil
}

// GetSkillRevision reads one revision of a skill.
func (h *SkillHandlers) GetSkillRevision(ctx context.Context, req api.GetSkillRevisionRequestObject) (api.GetSkillRevisionResponseObject, error) {
	r, err := h.svc.GetRevision(ctx, auth.CallerFrom(ctx), req.SkillId, req.RevisionId)
	if err != nil {
		return nil, err
	}
	v, err := toAPISkillRevision(r)
	if err != nil {
		return nil, err
	}
	return api.GetSkillRevision200JSONResponse(v), nil
}

// toAPISkill is a skill's head: the same members as an agent's.
func toAPISkill(a revision.Head) api.Skill { return api.Skill(toAPIAgent(a)) }

func toAPISkillRevision(r skill.Revision) (api.SkillRevision, error) {
	cfg, err := viewJSON[api.SkillConfig](r.Config)
	if err != nil {
		return api.SkillRevision{}, err
	}
	return api.SkillRevision{
		Id: r.ID, SkillId: r.HeadID, Number: int(r.Number), Config: cfg, ContentHash: r.ContentHash,
		CreatedById: r.CreatedByID, CreatedAt: timestamp.Of(r.CreatedAt),
	}, nil
}
