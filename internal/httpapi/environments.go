package httpapi

import (
	"context"

	"github.com/oapi-codegen/nullable"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/environment"
	"github.com/svcdev/svc/internal/environment/template"
	"github.com/svcdev/svc/internal/timestamp"
)

// EnvironmentHandlers implements /api/v1/environment-templates and
// /api/v1/environments.
type EnvironmentHandlers struct {
	templates    *template.Service
	environments *environment.Service
}

// ListEnvironmentTemplates lists the templates of the key's workspace.
func (h *EnvironmentHandlers) ListEnvironmentTemplates(ctx context.Context, req api.ListEnvironmentTemplatesRequestObject) (api.ListEnvironmentTemplatesResponseObject, error) {
	in := template.ListInput{Limit: req.Params.Limit, Cursor: req.Params.Cursor, Q: req.Params.Q, Archived: req.Params.Archived}
	if req.Params.Label != nil {
		in.Labels = *req.Params.Label
	}
	p, err := h.templates.List(ctx, auth.CallerFrom(ctx), in)
	if err != nil {
		return nil, err
	}
	return api.ListEnvironmentTemplates200JSONResponse{Items: mapAll(p.Items, toAPITemplate), NextCursor: nullableString(p.NextCursor)}, nil
}

// CreateEnvironmentTemplate creates a template.
func (h *EnvironmentHandlers) CreateEnvironmentTemplate(ctx context.Context, req api.CreateEnvironmentTemplateRequestObject) (api.CreateEnvironmentTemplateResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	in := template.CreateInput{
		Name: b.Name, ProviderID: b.EnvironmentProviderId, Config: mapOrNil(&b.Config), Labels: labelsOrNil(b.Labels),
		Enabled: b.Enabled, IdleStopSeconds: valueOrNil(b.IdleStopSeconds), IdleDeleteSeconds: valueOrNil(b.IdleDeleteSeconds),
	}
	if b.Description != nil {
		in.Description = *b.Description
	}
	t, err := h.templates.Create(ctx, auth.CallerFrom(ctx), in)
	if err != nil {
		return nil, err
	}
	etag, loc := t.ETag(), "/api/v1/environment-templates/"+t.ID
	return api.CreateEnvironmentTemplate201JSONResponse{Body: toAPITemplate(t), Headers: api.CreateEnvironmentTemplate201ResponseHeaders{ETag: &etag, Location: &loc}}, nil
}

// GetEnvironmentTemplate reads a template.
func (h *EnvironmentHandlers) GetEnvironmentTemplate(ctx context.Context, req api.GetEnvironmentTemplateRequestObject) (api.GetEnvironmentTemplateResponseObject, error) {
	t, err := h.templates.Get(ctx, auth.CallerFrom(ctx), req.EnvironmentTemplateId)
	if err != nil {
		return nil, err
	}
	etag := t.ETag()
	return api.GetEnvironmentTemplate200JSONResponse{Body: toAPITemplate(t), Headers: api.GetEnvironmentTemplate200ResponseHeaders{ETag: &etag}}, nil
}

// UpdateEnvironmentTemplate changes a template.
func (h *EnvironmentHandlers) UpdateEnvironmentTemplate(ctx context.Context, req api.UpdateEnvironmentTemplateRequestObject) (api.UpdateEnvironmentTemplateResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	t, err := h.templates.Update(ctx, auth.CallerFrom(ctx), template.UpdateInput{
		ID: req.EnvironmentTemplateId, IfMatch: &req.Params.IfMatch, Name: b.Name, Description: b.Description,
		Config: mapOrNil(b.Config), Labels: labelsOrNil(b.Labels), Enabled: b.Enabled,
		IdleStopSeconds: change(b.IdleStopSeconds), IdleDeleteSeconds: change(b.IdleDeleteSeconds),
	})
	if err != nil {
		return nil, err
	}
	etag := t.ETag()
	return api.UpdateEnvironmentTemplate200JSONResponse{Body: toAPITemplate(t), Headers: api.UpdateEnvironmentTemplate200ResponseHeaders{ETag: &etag}}, nil
}

// ListEnvironments lists the environments of the key's workspace.
func (h *EnvironmentHandlers) ListEnvironments(ctx context.Context, req api.ListEnvironmentsRequestObject) (api.ListEnvironmentsResponseObject, error) {
	p, err := h.environments.List(ctx, auth.CallerFrom(ctx), environment.ListInput{
		Limit: req.Params.Limit, Cursor: req.Params.Cursor, TemplateID: req.Params.TemplateId,
	})
	if err != nil {
		return nil, err
	}
	return api.ListEnvironments200JSONResponse{Items: mapAll(p.Items, toAPIEnvironment), NextCursor: nullableString(p.NextCursor)}, nil
}

// GetEnvironment reads an environment.
func (h *EnvironmentHandlers) GetEnvironment(ctx context.Context, req api.GetEnvironmentRequestObject) (api.GetEnvironmentResponseObject, error) {
	e, err := h.environments.Get(ctx, auth.CallerFrom(ctx), req.EnvironmentId)
	if err != nil {
		return nil, err
	}
	etag := e.ETag()
	return api.GetEnvironment200JSONResponse{Body: toAPIEnvironment(e), Headers: api.GetEnvironment200ResponseHeaders{ETag: &etag}}, nil
}

// DeleteEnvironment asks for an environment's deletion.
func (h *EnvironmentHandlers) DeleteEnvironment(ctx context.Context, req api.DeleteEnvironmentRequestObject) (api.DeleteEnvironmentResponseObject, error) {
	if err := h.environments.Delete(ctx, auth.CallerFrom(ctx), req.EnvironmentId, &req.Params.IfMatch); err != nil {
		return nil, err
	}
	return api.DeleteEnvironment204Response{}, nil
}

// labelsOrNil converts the generated labels type to a plain map; nil when
// the member was left out, empty when it was {}.
func labelsOrNil(l *api.Labels) map[string]string {
	if l == nil {
		return nil
	}
	if *l == nil {
		return map[string]string{}
	}
	return *l
}

// valueOrNil maps a nullable create member to a pointer: left out and null
// both mean none.
func valueOrNil[T any](n nullable.Nullable[T]) *T {
	if !n.IsSpecified() || n.IsNull() {
		return nil
	}
	v := n.MustGet()
	return &v
}

// nullableInt32 maps an optional stored integer to a member that is null
// when absent.
func nullableInt32(v *int32) nullable.Nullable[int] {
	if v == nil {
		return nullable.NewNullNullable[int]()
	}
	return nullable.NewNullableWithValue(int(*v))
}

func toAPITemplate(t template.Template) api.EnvironmentTemplate {
	return api.EnvironmentTemplate{
		Id: t.ID, Name: t.Name, Description: t.Description, EnvironmentProviderId: t.ProviderID, Config: t.Config,
		IdleStopSeconds: nullableInt32(t.IdleStopSeconds), IdleDeleteSeconds: nullableInt32(t.IdleDeleteSeconds),
		Labels: t.Labels, Enabled: t.Enabled, Version: int(t.Version), CreatedById: t.CreatedByID,
		UpdatedById: t.UpdatedByID, CreatedAt: timestamp.Of(t.CreatedAt), UpdatedAt: timestamp.Of(t.UpdatedAt),
	}
}

func toAPIEnvironment(e environment.Environment) api.Environment {
	return api.Environment{
		Id: e.ID, TemplateId: e.TemplateID, EnvironmentProviderId: e.ProviderID, Status: api.EnvironmentStatus(e.Status),
		LastUsedAt: nullableTime(e.LastUsedAt), Version: int(e.Version), CreatedById: e.CreatedByID,
		UpdatedById: e.UpdatedByID, CreatedAt: timestamp.Of(e.CreatedAt), UpdatedAt: timestamp.Of(e.UpdatedAt),
	}
}
