package httpapi

import (
	"context"

	"github.com/labstack/echo/v4"
	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/ratelimit"
	"github.com/svcdev/svc/internal/resource"
	"github.com/svcdev/svc/internal/timestamp"
)

// InvitationHandlers implements the invitations operations.
type InvitationHandlers struct {
	svc *invitation.Service
	// clients tells the client address acceptance attempts are counted against.
	clients *ratelimit.Clients
}

// CreateWorkspaceInvitation invites an address to the key's workspace.
func (h *InvitationHandlers) CreateWorkspaceInvitation(ctx context.Context, req api.CreateWorkspaceInvitationRequestObject) (api.CreateWorkspaceInvitationResponseObject, error) {
	c, err := h.svc.Create(ctx, invitation.CreateInput{
		Caller: auth.CallerFrom(ctx), Target: invitation.Target{WorkspaceID: req.WorkspaceId},
		Email: string(req.Body.Email), Role: req.Body.Role,
	})
	if err != nil {
		return nil, err
	}
	etag, location := resource.ETag(c.Invitation.ID, c.Invitation.Version), invitationPath(c.Invitation.ID)
	return api.CreateWorkspaceInvitation201JSONResponse{
		Body:    toAPICreatedInvitation(c),
		Headers: api.CreateWorkspaceInvitation201ResponseHeaders{ETag: &etag, Location: &location},
	}, nil
}

// CreateOrganizationInvitation invites an address to the key's organization.
func (h *InvitationHandlers) CreateOrganizationInvitation(ctx context.Context, req api.CreateOrganizationInvitationRequestObject) (api.CreateOrganizationInvitationResponseObject, error) {
	c, err := h.svc.Create(ctx, invitation.CreateInput{
		Caller: auth.CallerFrom(ctx), Target: invitation.Target{OrganizationID: req.OrganizationId},
		Email: string(req.Body.Email), Role: req.Body.Role,
	})
	if err != nil {
		return nil, err
	}
	etag, location := resource.ETag(c.Invitation.ID, c.Invitation.Version), invitationPath(c.Invitation.ID)
	return api.CreateOrganizationInvitation201JSONResponse{
		Body:    toAPICreatedInvitation(c),
		Headers: api.CreateOrganizationInvitation201ResponseHeaders{ETag: &etag, Location: &location},
	}, nil
}

// ListWorkspaceInvitations lists the key's workspace's invitations.
func (h *InvitationHandlers) ListWorkspaceInvitations(ctx context.Context, req api.ListWorkspaceInvitationsRequestObject) (api.ListWorkspaceInvitationsResponseObject, error) {
	page, err := h.svc.List(ctx, invitation.ListInput{
		Caller: auth.CallerFrom(ctx), Target: invitation.Target{WorkspaceID: req.WorkspaceId},
		Limit: req.Params.Limit, Cursor: req.Params.Cursor,
	})
	if err != nil {
		return nil, err
	}
	return api.ListWorkspaceInvitations200JSONResponse(toAPIInvitationPage(page)), nil
}

// ListOrganizationInvitations lists the key's organization's own invitations.
func (h *InvitationHandlers) ListOrganizationInvitations(ctx context.Context, req api.ListOrganizationInvitationsRequestObject) (api.ListOrganizationInvitationsResponseObject, error) {
	page, err := h.svc.List(ctx, invitation.ListInput{
		Caller: auth.CallerFrom(ctx), Target: invitation.Target{OrganizationID: req.OrganizationId},
		Limit: req.Params.Limit, Cursor: req.Params.Cursor,
	})
	if err != nil {
		return nil, err
	}
	return api.ListOrganizationInvitations200JSONResponse(toAPIInvitationPage(page)), nil
}

// GetInvitation reads an invitation the caller administers.
func (h *InvitationHandlers) GetInvitation(ctx context.Context, req api.GetInvitationRequestObject) (api.GetInvitationResponseObject, error) {
	inv, err := h.svc.Get(ctx, invitation.GetInput{Caller: auth.CallerFrom(ctx), ID: req.InvitationId})
	if err != nil {
		return nil, err
	}
	etag := resource.ETag(inv.ID, inv.Version)
	return api.GetInvitation200JSONResponse{Body: toAPIInvitation(inv), Headers: api.GetInvitation200ResponseHeaders{ETag: &etag}}, nil
}

// RevokeInvitation revokes a pending invitation.
func (h *InvitationHandlers) RevokeInvitation(ctx context.Context, req api.RevokeInvitationRequestObject) (api.RevokeInvitationResponseObject, error) {
	inv, err := h.svc.Revoke(ctx, invitation.RevokeInput{Caller: auth.CallerFrom(ctx), ID: req.InvitationId, IfMatch: &req.Params.IfMatch})
	if err != nil {
		return nil, err
	}
	etag := resource.ETag(inv.ID, inv.Version)
	return api.RevokeInvitation200JSONResponse{Body: toAPIInvitation(inv), Headers: api.RevokeInvitation200ResponseHeaders{ETag: &etag}}, nil
}

// AcceptInvitation accepts an invitation by its token; it needs no API key.
func (h *InvitationHandlers) AcceptInvitation(ctx context.Context, req api.AcceptInvitationRequestObject) (api.AcceptInvitationResponseObject, error) {
	in := invitation.AcceptInput{Token: req.Body.Token, ClientAddr: ratelimit.ClientAddr(ctx)}
	if req.Body.Password != nil {
		in.Password = *req.Body.Password
	}
	if req.Body.DisplayName != nil {
		in.DisplayName = *req.Body.DisplayName
	}
	res, err := h.svc.Accept(ctx, in)
	if err != nil {
		return nil, err
	}
	if res.ConfirmationSent {
		return api.AcceptInvitation202JSONResponse{Status: api.InvitationConfirmationSentStatusConfirmationSent}, nil
	}
	return api.AcceptInvitation200JSONResponse{
		Invitation: toAPIInvitation(res.Invitation), UserId: res.UserID, PrincipalId: res.PrincipalID,
	}, nil
}

// withClientAddr is the strict middleware of acceptInvitation: it puts the
// client's address (ratelimit.Clients) into the request's context, where the
// handler finds it; the strict handler sees only the context.
func (h *InvitationHandlers) withClientAddr(f api.StrictHandlerFunc, operationID string) api.StrictHandlerFunc {
	if operationID != "AcceptInvitation" {
		return f
	}
	return func(ec echo.Context, request any) (any, error) {
		req := ec.Request()
		ec.SetRequest(req.WithContext(ratelimit.WithClientAddr(req.Context(), h.clients.Addr(req))))
		return f(ec, request)
	}
}

func invitationPath(id string) string { return "/api/v1/invitations/" + id }

func toAPICreatedInvitation(c invitation.Created) api.CreatedInvitation {
	return api.CreatedInvitation{
		Delivery:      api.CreatedInvitationDelivery(c.Delivery),
		Invitation:    toAPIInvitation(c.Invitation),
		InvitationUrl: c.URL,
	}
}

func toAPIInvitationPage(p invitation.Page) api.InvitationPage {
	out := api.InvitationPage{Items: make([]api.Invitation, 0, len(p.Items)), NextCursor: nullableString(p.NextCursor)}
	for _, inv := range p.Items {
		out.Items = append(out.Items, toAPIInvitation(inv))
	}
	return out
}

func toAPIInvitation(inv invitation.Invitation) api.Invitation {
	return api.Invitation{
		Id:             inv.ID,
		Email:          openapi_types.Email(inv.Email),
		Role:           api.InvitationRole(inv.Role),
		OrganizationId: inv.OrganizationID,
		WorkspaceId:    nullableString(inv.WorkspaceID),
		PrincipalId:    nullableString(inv.PrincipalID),
		InvitedById:    inv.InvitedByID,
		CreatedAt:      timestamp.Of(inv.CreatedAt),
		UpdatedAt:      timestamp.Of(inv.UpdatedAt),
		ExpiresAt:      timestamp.Of(inv.ExpiresAt),
		AcceptedAt:     nullableTime(inv.AcceptedAt),
		RevokedAt:      nullableTime(inv.RevokedAt),
		Version:        int(inv.Version),
	}
}
