package httpapi

import (
	"context"

	"github.com/oapi-codegen/nullable"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/identity"
	"github.com/svcdev/svc/internal/timestamp"
)

// IdentityHandlers implements the identity and audit operations: the caller,
// workspaces, members, API keys and the audit trail.
type IdentityHandlers struct {
	svc *identity.Service
}

// errNoBody guards the generated decoder's nil body; the validator refuses a
// missing body before a handler runs.
var errNoBody = apperr.InvalidField("", "a JSON body is required")

// ListWorkspaces lists the workspaces of the key's organization.
func (h *IdentityHandlers) ListWorkspaces(ctx context.Context, req api.ListWorkspacesRequestObject) (api.ListWorkspacesResponseObject, error) {
	p, err := h.svc.ListWorkspaces(ctx, auth.CallerFrom(ctx), identity.PageInput{Limit: req.Params.Limit, Cursor: req.Params.Cursor})
	if err != nil {
		return nil, err
	}
	return api.ListWorkspaces200JSONResponse{Items: mapAll(p.Items, toAPIWorkspace), NextCursor: nullableString(p.NextCursor)}, nil
}

// CreateWorkspace creates a workspace and answers it with the caller's new admin key.
func (h *IdentityHandlers) CreateWorkspace(ctx context.Context, req api.CreateWorkspaceRequestObject) (api.CreateWorkspaceResponseObject, error) {
	if req.Body == nil {
		return nil, errNoBody
	}
	out, err := h.svc.CreateWorkspace(ctx, auth.CallerFrom(ctx), identity.CreateWorkspaceInput{Name: req.Body.Name})
	if err != nil {
		return nil, err
	}
	etag, loc := out.Workspace.ETag(), "/api/v1/workspaces/"+out.Workspace.ID
	return api.CreateWorkspace201JSONResponse{
		Body:    api.CreatedWorkspace{Workspace: toAPIWorkspace(out.Workspace), ApiKey: out.Token},
		Headers: api.CreateWorkspace201ResponseHeaders{ETag: &etag, Location: &loc},
	}, nil
}

// GetWorkspace reads a workspace of the key's organization.
func (h *IdentityHandlers) GetWorkspace(ctx context.Context, req api.GetWorkspaceRequestObject) (api.GetWorkspaceResponseObject, error) {
	ws, err := h.svc.GetWorkspace(ctx, auth.CallerFrom(ctx), req.WorkspaceId)
	if err != nil {
		return nil, err
	}
	etag := ws.ETag()
	return api.GetWorkspace200JSONResponse{Body: toAPIWorkspace(ws), Headers: api.GetWorkspace200ResponseHeaders{ETag: &etag}}, nil
}

// UpdateWorkspace renames a workspace.
func (h *IdentityHandlers) UpdateWorkspace(ctx context.Context, req api.UpdateWorkspaceRequestObject) (api.UpdateWorkspaceResponseObject, error) {
	if req.Body == nil {
		return nil, errNoBody
	}
	ws, err := h.svc.UpdateWorkspace(ctx, auth.CallerFrom(ctx), identity.UpdateWorkspaceInput{
		ID: req.WorkspaceId, Name: req.Body.Name, IfMatch: &req.Params.IfMatch,
	})
	if err != nil {
		return nil, err
	}
	etag := ws.ETag()
	return api.UpdateWorkspace200JSONResponse{Body: toAPIWorkspace(ws), Headers: api.UpdateWorkspace200ResponseHeaders{ETag: &etag}}, nil
}

// ListMembers lists the members of the key's workspace.
func (h *IdentityHandlers) ListMembers(ctx context.Context, req api.ListMembersRequestObject) (api.ListMembersResponseObject, error) {
	p, err := h.svc.ListMembers(ctx, auth.CallerFrom(ctx), identity.PageInput{Limit: req.Params.Limit, Cursor: req.Params.Cursor})
	if err != nil {
		return nil, err
	}
	return api.ListMembers200JSONResponse{Items: mapAll(p.Items, toAPIMember), NextCursor: nullableString(p.NextCursor)}, nil
}

// UpdateMember changes a member's role.
func (h *IdentityHandlers) UpdateMember(ctx context.Context, req api.UpdateMemberRequestObject) (api.UpdateMemberResponseObject, error) {
	if req.Body == nil {
		return nil, errNoBody
	}
	m, err := h.svc.UpdateMember(ctx, auth.CallerFrom(ctx), identity.UpdateMemberInput{
		PrincipalID: req.PrincipalId, Role: string(req.Body.Role), IfMatch: &req.Params.IfMatch,
	})
	if err != nil {
		return nil, err
	}
	etag := m.ETag()
	return api.UpdateMember200JSONResponse{Body: toAPIMember(m), Headers: api.UpdateMember200ResponseHeaders{ETag: &etag}}, nil
}

// RemoveMember removes a member from the key's workspace.
func (h *IdentityHandlers) RemoveMember(ctx context.Context, req api.RemoveMemberRequestObject) (api.RemoveMemberResponseObject, error) {
	err := h.svc.RemoveMember(ctx, auth.CallerFrom(ctx), identity.RemoveMemberInput{PrincipalID: req.PrincipalId, IfMatch: &req.Params.IfMatch})
	if err != nil {
		return nil, err
	}
	return api.RemoveMember204Response{}, nil
}

// ListAPIKeys lists the keys of the key's workspace, without their tokens.
func (h *IdentityHandlers) ListAPIKeys(ctx context.Context, req api.ListAPIKeysRequestObject) (api.ListAPIKeysResponseObject, error) {
	p, err := h.svc.ListAPIKeys(ctx, auth.CallerFrom(ctx), identity.PageInput{Limit: req.Params.Limit, Cursor: req.Params.Cursor})
	if err != nil {
		return nil, err
	}
	return api.ListAPIKeys200JSONResponse{Items: mapAll(p.Items, toAPIKey), NextCursor: nullableString(p.NextCursor)}, nil
}

// CreateAPIKey makes a key and answers its token, once.
func (h *IdentityHandlers) CreateAPIKey(ctx context.Context, req api.CreateAPIKeyRequestObject) (api.CreateAPIKeyResponseObject, error) {
	if req.Body == nil {
		return nil, errNoBody
	}
	in := identity.CreateAPIKeyInput{Name: req.Body.Name, Role: string(req.Body.Role)}
	if req.Body.ExpiresAt.IsSpecified() && !req.Body.ExpiresAt.IsNull() {
		t := req.Body.ExpiresAt.MustGet().Std()
		in.ExpiresAt = &t
	}
	out, err := h.svc.CreateAPIKey(ctx, auth.CallerFrom(ctx), in)
	if err != nil {
		return nil, err
	}
	// There is no GET of one key; its path names it for the revoke beneath it.
	etag, loc := out.APIKey.ETag(), "/api/v1/api-keys/"+out.APIKey.ID
	return api.CreateAPIKey201JSONResponse{
		Body:    api.CreatedAPIKey{ApiKey: toAPIKey(out.APIKey), Token: out.Token},
		Headers: api.CreateAPIKey201ResponseHeaders{ETag: &etag, Location: &loc},
	}, nil
}

// RevokeAPIKey revokes a key of the key's workspace.
func (h *IdentityHandlers) RevokeAPIKey(ctx context.Context, req api.RevokeAPIKeyRequestObject) (api.RevokeAPIKeyResponseObject, error) {
	k, err := h.svc.RevokeAPIKey(ctx, auth.CallerFrom(ctx), identity.RevokeAPIKeyInput{ID: req.ApiKeyId, IfMatch: &req.Params.IfMatch})
	if err != nil {
		return nil, err
	}
	etag := k.ETag()
	return api.RevokeAPIKey200JSONResponse{Body: toAPIKey(k), Headers: api.RevokeAPIKey200ResponseHeaders{ETag: &etag}}, nil
}

// ListAuditEvents lists the audit trail of the key's workspace, filtered.
func (h *IdentityHandlers) ListAuditEvents(ctx context.Context, req api.ListAuditEventsRequestObject) (api.ListAuditEventsResponseObject, error) {
	q := req.Params
	p, err := h.svc.ListAuditEvents(ctx, auth.CallerFrom(ctx), identity.ListAuditEventsInput{
		PageInput: identity.PageInput{Limit: q.Limit, Cursor: q.Cursor},
		ActorID:   q.ActorId, Action: q.Action, SubjectID: q.SubjectId, Since: timestamp.StdPtr(q.Since), Until: timestamp.StdPtr(q.Until),
	})
	if err != nil {
		return nil, err
	}
	return api.ListAuditEvents200JSONResponse{Items: mapAll(p.Items, toAPIAuditEvent), NextCursor: nullableString(p.NextCursor)}, nil
}

func mapAll[T, U any](in []T, f func(T) U) []U {
	out := make([]U, 0, len(in))
	for _, v := range in {
		out = append(out, f(v))
	}
	return out
}

func toAPIWorkspace(w identity.Workspace) api.Workspace {
	return api.Workspace{
		Id: w.ID, OrganizationId: w.OrganizationID, Name: w.Name, Version: int(w.Version),
		CreatedById: w.CreatedByID, UpdatedById: w.UpdatedByID, CreatedAt: timestamp.Of(w.CreatedAt), UpdatedAt: timestamp.Of(w.UpdatedAt),
	}
}

func toAPIMember(m identity.Member) api.Member {
	return api.Member{
		Principal: api.Principal{Id: m.PrincipalID, Kind: api.PrincipalKind(m.PrincipalKind), DisplayName: m.DisplayName},
		Email:     nullableString(m.Email), Role: api.WorkspaceRole(m.Role), Version: int(m.Version),
		CreatedAt: timestamp.Of(m.CreatedAt), UpdatedAt: timestamp.Of(m.UpdatedAt),
	}
}

func toAPIKey(k identity.APIKey) api.APIKey {
	return api.APIKey{
		Id: k.ID, WorkspaceId: k.WorkspaceID, PrincipalId: k.PrincipalID, Name: k.Name, Prefix: k.Prefix,
		Role: api.WorkspaceRole(k.Role), ExpiresAt: nullableTime(k.ExpiresAt), LastUsedAt: nullableTime(k.LastUsedAt),
		RevokedAt: nullableTime(k.RevokedAt), Version: int(k.Version), CreatedById: k.CreatedByID,
		CreatedAt: timestamp.Of(k.CreatedAt), UpdatedAt: timestamp.Of(k.UpdatedAt),
	}
}

func toAPIAuditEvent(e identity.AuditEvent) api.AuditEvent {
	version := nullable.NewNullNullable[int]()
	if e.Version != nil {
		version = nullable.NewNullableWithValue(int(*e.Version))
	}
	fields := e.ChangedFields
	if fields == nil {
		fields = []string{}
	}
	return api.AuditEvent{
		Id: e.ID, ActorId: nullableString(e.ActorID), Action: e.Action, SubjectType: e.SubjectType, SubjectId: e.SubjectID,
		Version: version, ChangedFields: fields, RequestId: nullableString(e.RequestID), CreatedAt: timestamp.Of(e.CreatedAt),
	}
}
