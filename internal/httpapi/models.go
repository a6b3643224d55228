package httpapi

import (
	"context"
	"net/url"

	"github.com/oapi-codegen/nullable"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/model"
	"github.com/svcdev/svc/internal/timestamp"
)

// ModelHandlers implements /api/v1/models and /api/v1/models/{key}.
type ModelHandlers struct {
	svc *model.Service
}

// ListModels lists the models of the key's workspace, newest first.
func (h *ModelHandlers) ListModels(ctx context.Context, req api.ListModelsRequestObject) (api.ListModelsResponseObject, error) {
	p, err := h.svc.List(ctx, auth.CallerFrom(ctx), req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	return api.ListModels200JSONResponse{Items: mapAll(p.Items, toAPIModel), NextCursor: nullableString(p.NextCursor)}, nil
}

// CreateModel creates a model.
func (h *ModelHandlers) CreateModel(ctx context.Context, req api.CreateModelRequestObject) (api.CreateModelResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	m, err := h.svc.Create(ctx, auth.CallerFrom(ctx), model.CreateInput{
		Key: b.Key, ProviderID: b.ProviderId, API: b.Api, Model: b.Model, Settings: mapOrNil(b.Settings),
		ContextWindow: valueOrNil(b.ContextWindow), Enabled: b.Enabled,
	})
	if err != nil {
		return nil, err
	}
	etag, loc := m.ETag(), "/api/v1/models/"+url.PathEscape(m.Key)
	return api.CreateModel201JSONResponse{Body: toAPIModel(m), Headers: api.CreateModel201ResponseHeaders{ETag: &etag, Location: &loc}}, nil
}

// GetModel reads a model of the key's workspace.
func (h *ModelHandlers) GetModel(ctx context.Context, req api.GetModelRequestObject) (api.GetModelResponseObject, error) {
	m, err := h.svc.Get(ctx, auth.CallerFrom(ctx), req.Key)
	if err != nil {
		return nil, err
	}
	etag := m.ETag()
	return api.GetModel200JSONResponse{Body: toAPIModel(m), Headers: api.GetModel200ResponseHeaders{ETag: &etag}}, nil
}

// UpdateModel changes a model.
func (h *ModelHandlers) UpdateModel(ctx context.Context, req api.UpdateModelRequestObject) (api.UpdateModelResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	m, err := h.svc.Update(ctx, auth.CallerFrom(ctx), model.UpdateInput{
		Key: req.Key, IfMatch: &req.Params.IfMatch, ProviderID: b.ProviderId, API: b.Api, Model: b.Model,
		Settings: mapOrNil(b.Settings), Enabled: b.Enabled,
		SetContextWindow: b.ContextWindow.IsSpecified(), ContextWindow: valueOrNil(b.ContextWindow),
	})
	if err != nil {
		return nil, err
	}
	etag := m.ETag()
	return api.UpdateModel200JSONResponse{Body: toAPIModel(m), Headers: api.UpdateModel200ResponseHeaders{ETag: &etag}}, nil
}

func toAPIModel(m model.Model) api.Model {
	return api.Model{
		Key: m.Key, ProviderId: m.ProviderID, Api: m.API, Model: m.Model, Settings: m.Settings,
		ContextWindow: nullableInt(m.ContextWindow), Enabled: m.Enabled,
		Version: int(m.Version), CreatedById: m.CreatedByID, UpdatedById: m.UpdatedByID,
		CreatedAt: timestamp.Of(m.CreatedAt), UpdatedAt: timestamp.Of(m.UpdatedAt),
	}
}

// nullableInt maps an optional integer to a member that is null when
// absent.
func nullableInt(v *int) nullable.Nullable[int] {
	if v == nil {
		return nullable.NewNullNullable[int]()
	}
	return nullable.NewNullableWithValue(*v)
}
