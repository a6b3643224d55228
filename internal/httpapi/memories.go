package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/oapi-codegen/nullable"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/memory"
	"github.com/svcdev/svc/internal/timestamp"
)

// MemoryHandlers implements /api/v1/memories.
type MemoryHandlers struct {
	svc *memory.Service
}

// ListMemories lists the memories of the key's workspace.
func (h *MemoryHandlers) ListMemories(ctx context.Context, req api.ListMemoriesRequestObject) (api.ListMemoriesResponseObject, error) {
	p, err := h.svc.List(ctx, auth.CallerFrom(ctx), req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	return api.ListMemories200JSONResponse{Items: mapAll(p.Items, toAPIMemory), NextCursor: nullableString(p.NextCursor)}, nil
}

// CreateMemory creates a memory.
func (h *MemoryHandlers) CreateMemory(ctx context.Context, req api.CreateMemoryRequestObject) (api.CreateMemoryResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	in := memory.CreateInput{Name: b.Name, Kind: memory.Kind(b.Kind), ProviderID: b.MemoryProviderId}
	if b.Description != nil {
		in.Description = *b.Description
	}
	m, err := h.svc.Create(ctx, auth.CallerFrom(ctx), in)
	if err != nil {
		return nil, err
	}
	etag, loc := m.ETag(), "/api/v1/memories/"+m.ID
	return api.CreateMemory201JSONResponse{Body: toAPIMemory(m), Headers: api.CreateMemory201ResponseHeaders{ETag: &etag, Location: &loc}}, nil
}

// GetMemory reads a memory.
func (h *MemoryHandlers) GetMemory(ctx context.Context, req api.GetMemoryRequestObject) (api.GetMemoryResponseObject, error) {
	m, err := h.svc.Get(ctx, auth.CallerFrom(ctx), req.MemoryId)
	if err != nil {
		return nil, err
	}
	etag := m.ETag()
	return api.GetMemory200JSONResponse{Body: toAPIMemory(m), Headers: api.GetMemory200ResponseHeaders{ETag: &etag}}, nil
}

// UpdateMemory renames or re-describes a memory.
func (h *MemoryHandlers) UpdateMemory(ctx context.Context, req api.UpdateMemoryRequestObject) (api.UpdateMemoryResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	m, err := h.svc.Update(ctx, auth.CallerFrom(ctx), memory.UpdateInput{
		ID: req.MemoryId, IfMatch: &req.Params.IfMatch, Name: b.Name, Description: b.Description,
	})
	if err != nil {
		return nil, err
	}
	etag := m.ETag()
	return api.UpdateMemory200JSONResponse{Body: toAPIMemory(m), Headers: api.UpdateMemory200ResponseHeaders{ETag: &etag}}, nil
}

// DeleteMemory deletes a memory and its records.
func (h *MemoryHandlers) DeleteMemory(ctx context.Context, req api.DeleteMemoryRequestObject) (api.DeleteMemoryResponseObject, error) {
	if err := h.svc.Delete(ctx, auth.CallerFrom(ctx), req.MemoryId, &req.Params.IfMatch); err != nil {
		return nil, err
	}
	return api.DeleteMemory204Response{}, nil
}

// ListMemoryRecords answers a page of a builtin memory's records, newest
// first, or those matching q, best first.
func (h *MemoryHandlers) ListMemoryRecords(ctx context.Context, req api.ListMemoryRecordsRequestObject) (api.ListMemoryRecordsResponseObject, error) {
	in := memory.RecordQuery{MemoryID: req.MemoryId, Limit: req.Params.Limit, Cursor: req.Params.Cursor}
	if req.Params.Q != nil {
		in.Query = *req.Params.Q
	}
	p, err := h.svc.ListRecords(ctx, auth.CallerFrom(ctx), in)
	if err != nil {
		return nil, err
	}
	items := make([]api.MemoryRecord, 0, len(p.Items))
	for _, rec := range p.Items {
		v, err := toAPIMemoryRecord(req.MemoryId, rec)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
	return api.ListMemoryRecords200JSONResponse{Items: items, NextCursor: nullableString(p.NextCursor)}, nil
}

// GetMemoryRecord reads a record of a builtin memory.
func (h *MemoryHandlers) GetMemoryRecord(ctx context.Context, req api.GetMemoryRecordRequestObject) (api.GetMemoryRecordResponseObject, error) {
	rec, err := h.svc.GetRecord(ctx, auth.CallerFrom(ctx), req.MemoryId, req.RecordId)
	if err != nil {
		return nil, err
	}
	v, err := toAPIMemoryRecord(req.MemoryId, rec)
	if err != nil {
		return nil, err
	}
	return api.GetMemoryRecord200JSONResponse(v), nil
}

// toAPIMemoryRecord maps a record of memory memoryID; its metadata's
// numbers are kept as written.
func toAPIMemoryRecord(memoryID string, rec memory.Record) (api.MemoryRecord, error) {
	metadata := map[string]any{}
	if len(rec.Metadata) > 0 {
		dec := json.NewDecoder(bytes.NewReader(rec.Metadata))
		dec.UseNumber()
		if err := dec.Decode(&metadata); err != nil {
			return api.MemoryRecord{}, fmt.Errorf("record %s: stored metadata: %w", rec.ID, err)
		}
	}
	score := nullable.NewNullNullable[float32]()
	if rec.Score != nil {
		score = nullable.NewNullableWithValue(float32(*rec.Score))
	}
	return api.MemoryRecord{
		Id: rec.ID, MemoryId: memoryID, Content: rec.Content, Metadata: metadata, Score: score, CreatedAt: timestamp.Of(rec.CreatedAt),
	}, nil
}

func toAPIMemory(m memory.Memory) api.Memory {
	return api.Memory{
		Id: m.ID, Name: m.Name, Description: m.Description, Kind: api.MemoryKind(m.Kind),
		MemoryProviderId: nullableString(m.ProviderID), Namespace: nullableString(m.Namespace),
		Version: int(m.Version), CreatedById: m.CreatedByID, UpdatedById: m.UpdatedByID,
		CreatedAt: timestamp.Of(m.CreatedAt), UpdatedAt: timestamp.Of(m.UpdatedAt),
	}
}
