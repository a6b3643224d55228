package invitation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/outbox"
)

// DeliveryQueued is the only delivery state today: the mail is in the outbox.
const DeliveryQueued = "queued"

// pendingIndex is the unique index that allows one pending invitation per
// address and target; concurrent identical invitations meet there.
const pendingIndex = "invitation_pending_idx"

// Created is a new invitation with its one-time URL.
type Created struct {
	Invitation Invitation
	// URL is the console page that accepts the invitation; it carries the token,
	// which is shown here once and never stored in clear.
	URL      string
	Delivery string
}

// MailPayload is the clear part of the identity_mail delivery of an invitation.
// It holds no secret: the URL with the token is in MailSecrets, sealed.
type MailPayload struct {
	Template         string    `json:"template"` // "invitation"
	To               string    `json:"to"`
	InvitationID     string    `json:"invitation_id"`
	OrganizationName string    `json:"organization_name"`
	WorkspaceName    *string   `json:"workspace_name"` // null for organization invitations
	Role             string    `json:"role"`
	InvitedBy        string    `json:"invited_by"` // the inviter's display name
	ExpiresAt        time.Time `json:"expires_at"`
}

// MailSecrets is the sealed part of an invitation's identity_mail delivery,
// sealed with the key ring under MailAAD(invitation id).
type MailSecrets struct {
	InvitationURL string `json:"invitation_url"`
}

// MailTemplate names the invitation mail in identity_mail payloads.
const MailTemplate = "invitation"

// MailAAD is the additional data the mail's secrets are sealed with: it binds
// them to the invitation, so they cannot be replayed into another delivery.
func MailAAD(invitationID string) []byte {
	return []byte(outbox.KindIdentityMail + ":" + invitationID)
}

// Create invites an address to the caller's workspace or organization. An
// expired pending invitation to the same address and target is replaced; a live
// one, or an address that is already a member, is refused as already_exists.
// The invitation, its mail (outbox) and its audit event commit together.
func (s *Service) Create(ctx context.Context, in CreateInput) (Created, error) {
	if err := in.Validate(); err != nil {
		return Created{}, err
	}
	orgID, wsID, err := scope(in.Caller, in.Target)
	if err != nil {
		return Created{}, err
	}
	// Nobody grants a role above their own: only owners invite owners.
	if wsID == nil && in.Role == auth.OrgOwner && in.Caller.OrganizationRole != auth.OrgOwner {
		return Created{}, apperr.New(apperr.KindPermissionDenied, "only organization owners can invite owners")
	}
	token, hash, err := newToken()
	if err != nil {
		return Created{}, err
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Created, error) {
		if _, err := s.q.InvitationDeleteExpiredPending(ctx, tx, db.InvitationDeleteExpiredPendingParams{
			OrganizationID: orgID, WorkspaceID: wsID, Email: in.Email,
		}); err != nil {
			return Created{}, err
		}
		// The lookup only refuses addresses that are already members. The
		// invitee's principal stays unknown (null) until acceptance: naming it now
		// would tell this tenant that the address has an account elsewhere.
		invitee, err := s.q.InvitationInviteeGet(ctx, tx, db.InvitationInviteeGetParams{
			OrganizationID: orgID, WorkspaceID: wsID, Email: in.Email,
		})
		switch {
		case err == nil:
			if invitee.IsMember {
				return Created{}, errAlreadyMember(in.Target.kind())
			}
		case !dbx.IsNotFound(err):
			return Created{}, err
		}
		row, err := s.q.InvitationInsert(ctx, tx, db.InvitationInsertParams{
			ID: id.New(id.Invitation), OrganizationID: orgID, WorkspaceID: wsID, Email: in.Email, Role: in.Role,
			PrincipalID: nil, InvitedByID: in.Caller.PrincipalID, TokenHash: hash, TtlSeconds: s.ttlSeconds,
		})
		if err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.ConstraintName == pendingIndex {
				return Created{}, ErrPending
			}
			return Created{}, err
		}
		link := s.acceptURL(token)
		if err := s.enqueueMail(ctx, tx, in.Caller, row, link); err != nil {
			return Created{}, err
		}
		if err := audit.Record(ctx, tx, audit.Event{
			OrganizationID: orgID, WorkspaceID: deref(wsID), ActorID: in.Caller.PrincipalID,
			Action: "invitation.created", SubjectType: "invitation", SubjectID: row.ID, Version: &row.Version,
		}); err != nil {
			return Created{}, fmt.Errorf("audit invitation.created: %w", err)
		}
		return Created{Invitation: fromRow(row), URL: link, Delivery: DeliveryQueued}, nil
	})
}

// enqueueMail writes the invitation mail to the outbox in tx. The URL carries
// the token, so it travels sealed; the clear payload is what the mail says.
func (s *Service) enqueueMail(ctx context.Context, tx pgx.Tx, c *auth.Caller, row db.Invitation, link string) error {
	payload := MailPayload{
		Template: MailTemplate, To: row.Email, InvitationID: row.ID, OrganizationName: c.OrganizationName,
		Role: row.Role, InvitedBy: c.DisplayName, ExpiresAt: row.ExpiresAt.UTC(),
	}
	if row.WorkspaceID != nil {
		payload.WorkspaceName = &c.WorkspaceName
	}
	secrets, err := json.Marshal(MailSecrets{InvitationURL: link})
	if err != nil {
		return fmt.Errorf("encode invitation mail secrets: %w", err)
	}
	sealed, err := s.ring.Seal(secrets, MailAAD(row.ID))
	if err != nil {
		return fmt.Errorf("seal invitation mail: %w", err)
	}
	if _, err := outbox.Enqueue(ctx, tx, outbox.Delivery{
		Kind: outbox.KindIdentityMail, WorkspaceID: deref(row.WorkspaceID), Payload: payload, Sealed: sealed,
	}); err != nil {
		return err
	}
	return nil
}

// scope checks a target against the caller and returns the organization and
// workspace the invitation is for. Only the key's own workspace, and only the
// organization that workspace belongs to, can be addressed: any other id is
// answered exactly as an absent one.
func scope(c *auth.Caller, t Target) (orgID string, wsID *string, err error) {
	if t.WorkspaceID != "" {
		if t.WorkspaceID != c.WorkspaceID {
			return "", nil, apperr.NotFound("workspace")
		}
		if err := auth.Require(c, auth.PermAdmin); err != nil {
			return "", nil, err
		}
		ws := c.WorkspaceID
		return c.OrganizationID, &ws, nil
	}
	if t.OrganizationID != c.OrganizationID {
		return "", nil, apperr.NotFound("organization")
	}
	if err := auth.Require(c, auth.PermOrganizationAdmin); err != nil {
		return "", nil, err
	}
	return c.OrganizationID, nil, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
