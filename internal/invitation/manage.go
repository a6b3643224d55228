package invitation

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/resource"
)

// Page is one page of invitations, newest first.
type Page = resource.Page[Invitation]

// List returns a page of a target's invitations, newest first: a workspace's
// invitations, or an organization's own (not its workspaces').
func (s *Service) List(ctx context.Context, in ListInput) (Page, error) {
	if err := in.Validate(); err != nil {
		return Page{}, err
	}
	orgID, wsID, err := scope(in.Caller, in.Target)
	if err != nil {
		return Page{}, err
	}
	after, err := resource.AfterID(in.Cursor)
	if err != nil {
		return Page{}, err
	}
	limit := resource.Limit(in.Limit)
	var rows []db.Invitation
	if wsID != nil {
		rows, err = s.q.InvitationListByWorkspace(ctx, s.pool, db.InvitationListByWorkspaceParams{
			OrganizationID: orgID, WorkspaceID: wsID, AfterID: after, PageLimit: resource.Fetch(limit),
		})
	} else {
		rows, err = s.q.InvitationListByOrganization(ctx, s.pool, db.InvitationListByOrganizationParams{
			OrganizationID: orgID, AfterID: after, PageLimit: resource.Fetch(limit),
		})
	}
	if err != nil {
		return Page{}, dbx.Translate(err, "invitation")
	}
	return resource.PageOf(rows, limit, fromRow, func(r db.Invitation) string { return r.ID }), nil
}

// Get returns an invitation the caller may see: one to the caller's workspace
// (as its admin) or to the caller's organization (as its owner or admin). Any
// other id is ErrNotFound, as if absent.
func (s *Service) Get(ctx context.Context, in GetInput) (Invitation, error) {
	if err := in.Validate(); err != nil {
		return Invitation{}, err
	}
	row, err := s.q.InvitationGetVisible(ctx, s.pool, db.InvitationGetVisibleParams(visibility(in.Caller, in.ID)))
	if err != nil {
		return Invitation{}, notFound(err)
	}
	return fromRow(row), nil
}

// Revoke revokes a pending invitation (its token stops working at once). An
// accepted invitation cannot be revoked. Revoking a revoked invitation changes
// nothing and answers it as it is: the change the client asked for has already
// been made, so a retried revoke succeeds even when its If-Match is now stale
// (RFC 9110, 13.1.1).
func (s *Service) Revoke(ctx context.Context, in RevokeInput) (Invitation, error) {
	if err := in.Validate(); err != nil {
		return Invitation{}, err
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Invitation, error) {
		row, err := s.q.InvitationGetVisibleForUpdate(ctx, tx, db.InvitationGetVisibleForUpdateParams(visibility(in.Caller, in.ID)))
		if err != nil {
			return Invitation{}, notFound(err)
		}
		if in.IfMatch == nil || strings.TrimSpace(*in.IfMatch) == "" {
			// Checked first so that a missing precondition is refused whatever the state.
			return Invitation{}, resource.CheckIfMatch(in.IfMatch, row.ID, row.Version)
		}
		switch {
		case row.RevokedAt != nil:
			return fromRow(row), nil
		case row.AcceptedAt != nil:
			return Invitation{}, ErrAccepted
		}
		if err := resource.CheckIfMatch(in.IfMatch, row.ID, row.Version); err != nil {
			return Invitation{}, err
		}
		row, err = s.q.InvitationRevoke(ctx, tx, row.ID)
		if err != nil {
			return Invitation{}, err
		}
		if err := audit.Record(ctx, tx, audit.Event{
			OrganizationID: row.OrganizationID, WorkspaceID: deref(row.WorkspaceID), ActorID: in.Caller.PrincipalID,
			Action: "invitation.revoked", SubjectType: "invitation", SubjectID: row.ID, Version: &row.Version,
			ChangedFields: []string{"revoked_at"},
		}); err != nil {
			return Invitation{}, fmt.Errorf("audit invitation.revoked: %w", err)
		}
		return fromRow(row), nil
	})
}

// visibleParams selects an invitation by id among those the caller may see.
type visibleParams struct {
	ID                string
	OrganizationID    string
	WorkspaceID       *string
	WorkspaceAdmin    bool
	OrganizationAdmin bool
}

func visibility(c *auth.Caller, invitationID string) visibleParams {
	ws := c.WorkspaceID
	return visibleParams{
		ID: invitationID, OrganizationID: c.OrganizationID, WorkspaceID: &ws,
		WorkspaceAdmin: c.Allows(auth.PermAdmin), OrganizationAdmin: c.IsOrganizationAdmin(),
	}
}

// notFound maps a missed lookup to ErrNotFound, and anything else once.
func notFound(err error) error {
	if dbx.IsNotFound(err) {
		return ErrNotFound
	}
	return dbx.Translate(err, "invitation")
}
