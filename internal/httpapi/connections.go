package httpapi

import (
	"context"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/connection"
	"github.com/svcdev/svc/internal/timestamp"
)

// ConnectionHandlers implements /api/v1/connections, its revoke and
// authorizations, and /api/v1/connection-operations/{operation_id}.
type ConnectionHandlers struct {
	svc *connection.Service
}

// ListConnections lists the connections of the key's workspace, newest first.
func (h *ConnectionHandlers) ListConnections(ctx context.Context, req api.ListConnectionsRequestObject) (api.ListConnectionsResponseObject, error) {
	p, err := h.svc.List(ctx, auth.CallerFrom(ctx), req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	return api.ListConnections200JSONResponse{Items: mapAll(p.Items, toAPIConnection), NextCursor: nullableString(p.NextCursor)}, nil
}

// CreateConnection creates a connection.
func (h *ConnectionHandlers) CreateConnection(ctx context.Context, req api.CreateConnectionRequestObject) (api.CreateConnectionResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	c, err := h.svc.Create(ctx, auth.CallerFrom(ctx), connection.CreateInput{
		ProviderID: b.ProviderId, App: b.App, Name: b.Name, Account: b.Account,
		Config: mapOrNil(b.Config), Credential: mapOrNil(b.Credential), Enabled: b.Enabled,
	})
	if err != nil {
		return nil, err
	}
	etag, loc := c.ETag(), "/api/v1/connections/"+c.ID
	return api.CreateConnection201JSONResponse{Body: toAPIConnection(c), Headers: api.CreateConnection201ResponseHeaders{ETag: &etag, Location: &loc}}, nil
}

// GetConnection reads a connection of the key's workspace.
func (h *ConnectionHandlers) GetConnection(ctx context.Context, req api.GetConnectionRequestObject) (api.GetConnectionResponseObject, error) {
	c, err := h.svc.Get(ctx, auth.CallerFrom(ctx), req.ConnectionId)
	if err != nil {
		return nil, err
	}
	etag := c.ETag()
	return api.GetConnection200JSONResponse{Body: toAPIConnection(c), Headers: api.GetConnection200ResponseHeaders{ETag: &etag}}, nil
}

// UpdateConnection changes a connection.
func (h *ConnectionHandlers) UpdateConnection(ctx context.Context, req api.UpdateConnectionRequestObject) (api.UpdateConnectionResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	c, err := h.svc.Update(ctx, auth.CallerFrom(ctx), connection.UpdateInput{
		ID: req.ConnectionId, IfMatch: &req.Params.IfMatch, Name: b.Name, Config: mapOrNil(b.Config),
		Credential: change(b.Credential), Enabled: b.Enabled,
	})
	if err != nil {
		return nil, err
	}
	etag := c.ETag()
	return api.UpdateConnection200JSONResponse{Body: toAPIConnection(c), Headers: api.UpdateConnection200ResponseHeaders{ETag: &etag}}, nil
}

// RevokeConnection removes a connection's credential.
func (h *ConnectionHandlers) RevokeConnection(ctx context.Context, req api.RevokeConnectionRequestObject) (api.RevokeConnectionResponseObject, error) {
	c, err := h.svc.Revoke(ctx, auth.CallerFrom(ctx), req.ConnectionId, &req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	etag := c.ETag()
	return api.RevokeConnection200JSONResponse{Body: toAPIConnection(c), Headers: api.RevokeConnection200ResponseHeaders{ETag: &etag}}, nil
}

// AuthorizeConnection starts an authorization of a connection.
func (h *ConnectionHandlers) AuthorizeConnection(ctx context.Context, req api.AuthorizeConnectionRequestObject) (api.AuthorizeConnectionResponseObject, error) {
	o, err := h.svc.Authorize(ctx, auth.CallerFrom(ctx), req.ConnectionId)
	if err != nil {
		return nil, err
	}
	etag, loc := o.ETag(), "/api/v1/connection-operations/"+o.ID
	return api.AuthorizeConnection201JSONResponse{Body: toAPIOperation(o), Headers: api.AuthorizeConnection201ResponseHeaders{ETag: &etag, Location: &loc}}, nil
}

// GetConnectionOperation reads a connection authorization operation.
func (h *ConnectionHandlers) GetConnectionOperation(ctx context.Context, req api.GetConnectionOperationRequestObject) (api.GetConnectionOperationResponseObject, error) {
	o, err := h.svc.GetOperation(ctx, auth.CallerFrom(ctx), req.OperationId)
	if err != nil {
		return nil, err
	}
	etag := o.ETag()
	return api.GetConnectionOperation200JSONResponse{Body: toAPIOperation(o), Headers: api.GetConnectionOperation200ResponseHeaders{ETag: &etag}}, nil
}

func toAPIConnection(c connection.Connection) api.Connection {
	return api.Connection{
		Id: c.ID, ProviderId: c.ProviderID, App: c.App, Account: nullableString(c.Account), Name: c.Name, Config: c.Config,
		CredentialConfigured: c.CredentialConfigured, Enabled: c.Enabled, Version: int(c.Version),
		CreatedById: c.CreatedByID, UpdatedById: c.UpdatedByID, CreatedAt: timestamp.Of(c.CreatedAt), UpdatedAt: timestamp.Of(c.UpdatedAt),
	}
}

func toAPIOperation(o connection.Operation) api.ConnectionOperation {
	return api.ConnectionOperation{
		Id: o.ID, ConnectionId: o.ConnectionID, Status: api.ConnectionOperationStatus(o.Status),
		RedirectUrl: nullableString(o.RedirectURL), Error: nullableString(o.Error), Owner: o.Owner, Deadline: timestamp.Of(o.Deadline),
		Version: int(o.Version), CreatedById: o.CreatedByID, CreatedAt: timestamp.Of(o.CreatedAt), UpdatedAt: timestamp.Of(o.UpdatedAt),
		SettledAt: nullableTime(o.SettledAt),
	}
}
