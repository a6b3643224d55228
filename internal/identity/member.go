package identity

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/resource"
)

// Member is a principal's membership of a workspace.
type Member struct {
	PrincipalID   string
	PrincipalKind string
	DisplayName   string
	Email         *string // nil for service principals
	Role          string
	Version       int32
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// ETag is the membership's entity tag, "<principal_id>:<version>".
func (m Member) ETag() string { return resource.ETag(m.PrincipalID, m.Version) }

func memberOf(r db.WorkspaceMemberListRow) Member {
	return Member{
		PrincipalID: r.PrincipalID, PrincipalKind: r.PrincipalKind, DisplayName: r.DisplayName, Email: r.Email,
		Role: r.Role, Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// ListMembers lists the members of the caller's workspace, newest principal first.
func (s *Service) ListMembers(ctx context.Context, c *auth.Caller, in PageInput) (Page[Member], error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Page[Member]{}, err
	}
	p, err := in.parse()
	if err != nil {
		return Page[Member]{}, err
	}
	rows, err := s.q.WorkspaceMemberList(ctx, s.pool, db.WorkspaceMemberListParams{
		WorkspaceID: c.WorkspaceID, AfterID: p.afterID, PageLimit: resource.Fetch(p.limit),
	})
	if err != nil {
		return Page[Member]{}, dbx.Translate(err, "member")
	}
	return resource.PageOf(rows, p.limit, memberOf, func(r db.WorkspaceMemberListRow) string { return r.PrincipalID }), nil
}

// UpdateMemberInput changes a member's role.
type UpdateMemberInput struct {
	PrincipalID string
	Role        string
	IfMatch     *string
}

// Validate checks the role.
func (in UpdateMemberInput) Validate() error { return validateRole(in.Role) }

// RemoveMemberInput removes a member.
type RemoveMemberInput struct {
	PrincipalID string
	IfMatch     *string
}

// errOrganizationAdmin refuses to demote or remove the workspace membership
// of an organization owner or admin.
var errOrganizationAdmin = apperr.New(apperr.KindConflict,
	"this member is an owner or admin of the organization and acts as admin in all its workspaces: change their organization role first")

// errLastAdmin refuses a change that would leave a workspace without an admin
// member.
var errLastAdmin = apperr.New(apperr.KindConflict, "this is the workspace's last admin: make another member admin first")

// UpdateMember changes the role of a member of the caller's workspace. The
// workspace always keeps at least one admin member. The change applies to the
// member's keys at once in this process.
func (s *Service) UpdateMember(ctx context.Context, c *auth.Caller, in UpdateMemberInput) (Member, error) {
	if err := auth.Require(c, auth.PermAdmin); err != nil {
		return Member{}, err
	}
	if err := in.Validate(); err != nil {
		return Member{}, err
	}
	var changed bool
	m, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Member, error) {
		cur, err := s.lockMember(ctx, tx, c.WorkspaceID, in.PrincipalID, in.IfMatch)
		if err != nil {
			return Member{}, err
		}
		if cur.Role == in.Role {
			return cur, nil
		}
		if err := s.keepOrganizationAdmin(ctx, tx, c.OrganizationID, in.PrincipalID); err != nil {
			return Member{}, err
		}
		if err := s.keepAnAdmin(ctx, tx, c.WorkspaceID, cur.Role); err != nil {
			return Member{}, err
		}
		row, err := s.q.WorkspaceMemberUpdateRole(ctx, tx, db.WorkspaceMemberUpdateRoleParams{WorkspaceID: c.WorkspaceID, PrincipalID: in.PrincipalID, Role: in.Role})
		if err != nil {
			return Member{}, err
		}
		cur.Role, cur.Version, cur.UpdatedAt = row.Role, row.Version, row.UpdatedAt
		changed = true
		return cur, audit.Record(ctx, tx, audit.Event{
			OrganizationID: c.OrganizationID, WorkspaceID: c.WorkspaceID, ActorID: c.PrincipalID,
			Action: "member.role_changed", SubjectType: "member", SubjectID: in.PrincipalID, Version: &row.Version, ChangedFields: []string{"role"},
		})
	})
	if err == nil && changed {
		s.forget()
	}
	return m, err
}

// RemoveMember removes a member from the caller's workspace and revokes the
// member's keys of the workspace, so they stop working at once. Organization
// owners and admins, who act as admin in every workspace, cannot be removed or
// demoted (409 conflict). The workspace always keeps at least one admin member.
func (s *Service) RemoveMember(ctx context.Context, c *auth.Caller, in RemoveMemberInput) error {
	if err := auth.Require(c, auth.PermAdmin); err != nil {
		return err
	}
	err := dbx.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		cur, err := s.lockMember(ctx, tx, c.WorkspaceID, in.PrincipalID, in.IfMatch)
		if err != nil {
			return err
		}
		if err := s.keepOrganizationAdmin(ctx, tx, c.OrganizationID, in.PrincipalID); err != nil {
			return err
		}
		if err := s.keepAnAdmin(ctx, tx, c.WorkspaceID, cur.Role); err != nil {
			return err
		}
		if err := s.q.WorkspaceMemberDelete(ctx, tx, db.WorkspaceMemberDeleteParams{WorkspaceID: c.WorkspaceID, PrincipalID: in.PrincipalID}); err != nil {
			return err
		}
		events := []audit.Event{{Action: "member.removed", SubjectType: "member", SubjectID: in.PrincipalID, Version: &cur.Version}}
		keys, err := s.q.APIKeyRevokeByPrincipal(ctx, tx, db.APIKeyRevokeByPrincipalParams{WorkspaceID: c.WorkspaceID, PrincipalID: in.PrincipalID})
		if err != nil {
			return err
		}
		for _, k := range keys {
			events = append(events, audit.Event{Action: "api_key.revoked", SubjectType: "api_key", SubjectID: k.ID, Version: &k.Version, ChangedFields: []string{"revoked_at"}})
		}
		for _, e := range events {
			e.OrganizationID, e.WorkspaceID, e.ActorID = c.OrganizationID, c.WorkspaceID, c.PrincipalID
			if err := audit.Record(ctx, tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.forget()
	}
	return err
}

// lockMember takes the workspace's membership lock, then reads and locks the
// membership and checks the caller's If-Match against it. The workspace lock
// serializes every membership change of the workspace, so the last-admin count
// that follows cannot be invalidated by a concurrent change.
func (s *Service) lockMember(ctx context.Context, tx pgx.Tx, workspaceID, principalID string, ifMatch *string) (Member, error) {
	if _, err := s.q.WorkspaceLockMembership(ctx, tx, workspaceID); err != nil {
		return Member{}, dbx.Translate(err, "workspace")
	}
	row, err := s.q.WorkspaceMemberGetForUpdate(ctx, tx, db.WorkspaceMemberGetForUpdateParams{WorkspaceID: workspaceID, PrincipalID: principalID})
	if err != nil {
		return Member{}, dbx.Translate(err, "member")
	}
	if err := resource.CheckIfMatch(ifMatch, row.PrincipalID, row.Version); err != nil {
		return Member{}, err
	}
	return memberOf(db.WorkspaceMemberListRow(row)), nil
}

// keepOrganizationAdmin refuses to change the workspace membership of an owner
// or admin of the organization. They act as admin in every workspace of it
// whatever their membership says, so a demotion would change nothing, and a
// removal would revoke their keys of the workspace: an owner whose only keys
// were there would have no way back in. Their access changes with their
// organization role, not here.
func (s *Service) keepOrganizationAdmin(ctx context.Context, tx pgx.Tx, organizationID, principalID string) error {
	role, err := s.q.OrganizationMemberRoleGet(ctx, tx, db.OrganizationMemberRoleGetParams{OrganizationID: organizationID, PrincipalID: principalID})
	switch {
	case dbx.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case role == auth.OrgOwner || role == auth.OrgAdmin:
		return errOrganizationAdmin
	}
	return nil
}

// keepAnAdmin refuses to demote or remove a member whose role is currentRole
// when that member is the workspace's only admin.
func (s *Service) keepAnAdmin(ctx context.Context, tx pgx.Tx, workspaceID, currentRole string) error {
	if currentRole != auth.RoleAdmin {
		return nil
	}
	n, err := s.q.WorkspaceMemberCountAdmins(ctx, tx, workspaceID)
	if err != nil {
		return err
	}
	if n <= 1 {
		return errLastAdmin
	}
	return nil
}
