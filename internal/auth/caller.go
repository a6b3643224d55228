// Package auth authenticates API requests and decides what they may do. A
// workspace API key is looked up by the SHA-256 of its token (tokens carry 256
// bits of randomness, so a slow hash would add nothing), cached for at most
// CacheTTL, and acts with the lower of its own role and its principal's current
// role in the workspace.
package auth

import (
	"context"
	"time"

	"github.com/svcdev/svc/internal/apperr"
)

// Workspace roles, lowest first, and organization roles.
const (
	RoleViewer = "viewer"
	RoleRunner = "runner"
	RoleEditor = "editor"
	RoleAdmin  = "admin"

	OrgOwner  = "owner"
	OrgAdmin  = "admin"
	OrgMember = "member"
)

// WorkspaceRoles lists the workspace roles, lowest first.
var WorkspaceRoles = []string{RoleViewer, RoleRunner, RoleEditor, RoleAdmin}

// OrganizationRoles lists the organization roles.
var OrganizationRoles = []string{OrgOwner, OrgAdmin, OrgMember}

// rank orders workspace roles; unknown roles rank 0 (no access).
func rank(role string) int {
	for i, r := range WorkspaceRoles {
		if r == role {
			return i + 1
		}
	}
	return 0
}

// Permissions an operation can require (x-svc-permission in the contract).
const (
	PermNone              = "none"
	PermRead              = "read"
	PermRun               = "run"
	PermWrite             = "write"
	PermAdmin             = "admin"
	PermOrganizationAdmin = "organization_admin"
)

// minimumRole maps each workspace permission to the lowest role that has it.
var minimumRole = map[string]string{PermRead: RoleViewer, PermRun: RoleRunner, PermWrite: RoleEditor, PermAdmin: RoleAdmin}

// Caller is the authenticated principal of a request and where it acts.
type Caller struct {
	PrincipalID   string
	PrincipalKind string
	DisplayName   string
	UserID        string // "" for service principals
	Email         string

	OrganizationID   string
	OrganizationName string
	WorkspaceID      string
	WorkspaceName    string

	// Role is the role the request acts with: the lower of the key's role and the
	// principal's role in the workspace (organization owners and admins count as
	// workspace admins).
	Role string
	// OrganizationRole is the principal's role in the organization, or "".
	OrganizationRole string

	KeyID        string
	KeyName      string
	KeyPrefix    string
	KeyRole      string
	KeyExpiresAt *time.Time
}

// Allows reports whether the caller has a permission.
func (c *Caller) Allows(perm string) bool {
	switch perm {
	case PermNone:
		return true
	case PermOrganizationAdmin:
		// The key's own role caps it too: an owner's viewer key is a viewer.
		return c.IsOrganizationAdmin() && c.Role == RoleAdmin
	}
	min, ok := minimumRole[perm]
	return ok && rank(c.Role) >= rank(min)
}

// Require refuses a caller that lacks perm: unauthenticated without a caller,
// permission_denied without the permission. The HTTP middleware enforces each
// operation's permission; services call Require too, so that no other caller (a
// command, a test) can skip the check.
func Require(c *Caller, perm string) error {
	if c == nil {
		return ErrUnauthenticated
	}
	if !c.Allows(perm) {
		return apperr.New(apperr.KindPermissionDenied, "this operation needs the "+perm+" permission")
	}
	return nil
}

// IsOrganizationAdmin reports whether the principal is owner or admin of the
// organization of the key's workspace.
func (c *Caller) IsOrganizationAdmin() bool {
	return c.OrganizationRole == OrgOwner || c.OrganizationRole == OrgAdmin
}

type callerKey struct{}

// WithCaller returns ctx carrying the caller.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the request's caller. Operations that need authentication
// always have one: the middleware refuses requests without.
func CallerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}

// EffectiveRole combines a key's role with the principal's roles: the principal's
// workspace role is its workspace membership, raised to admin for organization
// owners and admins; the key acts with the lower of the two. "" means no access.
func EffectiveRole(keyRole, workspaceRole, organizationRole string) string {
	principal := workspaceRole
	if organizationRole == OrgOwner || organizationRole == OrgAdmin {
		principal = RoleAdmin
	}
	if rank(principal) == 0 || rank(keyRole) == 0 {
		return ""
	}
	if rank(keyRole) < rank(principal) {
		return keyRole
	}
	return principal
}

// ValidWorkspaceRole reports whether role is a workspace role.
func ValidWorkspaceRole(role string) bool { return rank(role) > 0 }
