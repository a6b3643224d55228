package httpapi

import (
	"context"

	"github.com/oapi-codegen/nullable"
	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/auth"
)

// GetMe answers from the authenticated caller alone: the middleware has already
// resolved the key (from its short cache), so the answer needs no query.
func (h *IdentityHandlers) GetMe(ctx context.Context, _ api.GetMeRequestObject) (api.GetMeResponseObject, error) {
	c := auth.CallerFrom(ctx)
	me := api.Me{
		Principal:    api.Principal{Id: c.PrincipalID, Kind: api.PrincipalKind(c.PrincipalKind), DisplayName: c.DisplayName},
		Organization: api.MeOrganization{Id: c.OrganizationID, Name: c.OrganizationName},
		Workspace:    api.MeWorkspace{Id: c.WorkspaceID, Name: c.WorkspaceName},
		Role:         api.WorkspaceRole(c.Role),
		ApiKey: api.MeAPIKey{
			Id: c.KeyID, Name: c.KeyName, Prefix: c.KeyPrefix, Role: api.WorkspaceRole(c.KeyRole),
			ExpiresAt: nullableTime(c.KeyExpiresAt),
		},
	}
	if c.UserID != "" {
		me.User = nullable.NewNullableWithValue(api.MeUser{Id: c.UserID, Email: openapi_types.Email(c.Email)})
	} else {
		me.User = nullable.NewNullNullable[api.MeUser]()
	}
	if c.OrganizationRole != "" {
		me.OrganizationRole = nullable.NewNullableWithValue(api.MeOrganizationRole(c.OrganizationRole))
	} else {
		me.OrganizationRole = nullable.NewNullNullable[api.MeOrganizationRole]()
	}
	return api.GetMe200JSONResponse(me), nil
}
