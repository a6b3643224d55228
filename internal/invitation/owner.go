package invitation

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/identity"
)

// InviteOwner invites in.Email to own the organization an operator is
// creating, in tx, the transaction that creates it (identity.CreateOrganization
// calls it as its identity.InviteOwnerFunc): the invitation, its mail (queued in
// the outbox, sent by a control process through the configured transport) and
// its audit event commit with the organization. The organization is new, so
// no invitation or member can stand in the way.
func (s *Service) InviteOwner(ctx context.Context, tx pgx.Tx, in identity.OwnerInvite) (identity.OwnerInvitation, error) {
	token, hash, err := newToken()
	if err != nil {
		return identity.OwnerInvitation{}, err
	}
	row, err := s.q.InvitationInsert(ctx, tx, db.InvitationInsertParams{
		ID: id.New(id.Invitation), OrganizationID: in.OrganizationID, WorkspaceID: nil, Email: in.Email, Role: auth.OrgOwner,
		PrincipalID: nil, InvitedByID: in.InviterID, TokenHash: hash, TtlSeconds: s.ttlSeconds,
	})
	if err != nil {
		return identity.OwnerInvitation{}, err
	}
	link := s.acceptURL(token)
	inviter := &auth.Caller{PrincipalID: in.InviterID, OrganizationID: in.OrganizationID, OrganizationName: in.OrganizationName, DisplayName: in.InviterName}
	if err := s.enqueueMail(ctx, tx, inviter, row, link); err != nil {
		return identity.OwnerInvitation{}, err
	}
	if err := audit.Record(ctx, tx, audit.Event{
		OrganizationID: in.OrganizationID, ActorID: in.InviterID,
		Action: "invitation.created", SubjectType: "invitation", SubjectID: row.ID, Version: &row.Version,
	}); err != nil {
		return identity.OwnerInvitation{}, fmt.Errorf("audit invitation.created: %w", err)
	}
	return identity.OwnerInvitation{ID: row.ID, URL: link, ExpiresAt: row.ExpiresAt.UTC()}, nil
}
