package invitation

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/outbox"
)

// Mail templates of an acceptance that waits for the address's owner.
const (
	// ConfirmationMailTemplate mails a new address the link that confirms the
	// acceptance and creates its account.
	ConfirmationMailTemplate = "invitation_confirmation"
	// AttemptMailTemplate tells an existing account that someone tried to accept
	// an invitation for it with another password. It links to the invitation's
	// own page, where the owner accepts with their password.
	AttemptMailTemplate = "invitation_attempt"
)

// ConfirmationMailPayload is the clear part of the identity_mail delivery of
// both mails. MailID names the delivery's sealed link (the pending acceptance's
// id for a confirmation); the link itself is in ConfirmationMailSecrets, sealed
// under ConfirmationMailAAD(MailID).
type ConfirmationMailPayload struct {
	Template         string    `json:"template"`
	To               string    `json:"to"`
	InvitationID     string    `json:"invitation_id"`
	MailID           string    `json:"mail_id"`
	OrganizationName string    `json:"organization_name"`
	WorkspaceName    *string   `json:"workspace_name"`
	Role             string    `json:"role"`
	InvitedBy        string    `json:"invited_by"`
	ExpiresAt        time.Time `json:"expires_at"` // when the link stops working
}

// ConfirmationMailSecrets is the sealed part of those deliveries.
type ConfirmationMailSecrets struct {
	Link string `json:"link"`
}

// ConfirmationMailAAD binds a sealed link to its delivery's MailID.
func ConfirmationMailAAD(mailID string) []byte {
	return []byte(outbox.KindIdentityMail + ":invitation_confirmation:" + mailID)
}

// ErrConfirmationUnknown: a confirmation link that is malformed, unknown, used
// or replaced by a newer one. ErrConfirmationExpired: one past its expiry.
var (
	ErrConfirmationUnknown = apperr.InvalidField("token", "is not a confirmation link that can be used")
	ErrConfirmationExpired = apperr.New(apperr.KindConflict, "the confirmation link has expired")
)

// mailConfirmation stores the pending acceptance of inv by a new address,
// replacing an older one, and queues the mail with its link, in one
// transaction.
func (s *Service) mailConfirmation(ctx context.Context, inv db.Invitation, pwHash, displayName string) (AcceptResult, error) {
	token, hash, err := newToken()
	if err != nil {
		return AcceptResult{}, err
	}
	link := s.publicURL + "/invitations/confirm?token=" + url.QueryEscape(token)
	err = dbx.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		row, err := s.q.InvitationConfirmationUpsert(ctx, tx, db.InvitationConfirmationUpsertParams{
			ID: id.New(id.MailLink), InvitationID: inv.ID, TokenHash: hash, PasswordHash: pwHash,
			DisplayName: displayName, TtlSeconds: s.confirmTTL.Seconds(),
		})
		if err != nil {
			return err
		}
		return s.enqueueConfirmationMail(ctx, tx, ConfirmationMailTemplate, inv, row.ID, link, row.ExpiresAt)
	})
	if err != nil {
		return AcceptResult{}, err
	}
	return AcceptResult{ConfirmationSent: true}, nil
}

// mailAttempt queues the mail that tells the existing account of inv's address
// that someone tried to accept with another password. The account is not
// changed. The work matches mailConfirmation's: one transaction, one delivery.
func (s *Service) mailAttempt(ctx context.Context, inv db.Invitation, token string) (AcceptResult, error) {
	err := dbx.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		return s.enqueueConfirmationMail(ctx, tx, AttemptMailTemplate, inv, id.New(id.MailLink), s.acceptURL(token), inv.ExpiresAt)
	})
	if err != nil {
		return AcceptResult{}, err
	}
	return AcceptResult{ConfirmationSent: true}, nil
}

// enqueueConfirmationMail writes one of the two mails to the outbox in tx.
func (s *Service) enqueueConfirmationMail(ctx context.Context, tx pgx.Tx, template string, inv db.Invitation, mailID, link string, expires time.Time) error {
	p, err := s.q.InvitationPreviewByTokenHash(ctx, tx, inv.TokenHash)
	if err != nil {
		return notFound(err)
	}
	payload := ConfirmationMailPayload{
		Template: template, To: inv.Email, InvitationID: inv.ID, MailID: mailID, OrganizationName: p.OrganizationName,
		WorkspaceName: p.WorkspaceName, Role: inv.Role, InvitedBy: p.InvitedBy, ExpiresAt: expires.UTC(),
	}
	secrets, err := json.Marshal(ConfirmationMailSecrets{Link: link})
	if err != nil {
		return fmt.Errorf("encode %s mail secrets: %w", template, err)
	}
	sealed, err := s.ring.Seal(secrets, ConfirmationMailAAD(mailID))
	if err != nil {
		return fmt.Errorf("seal %s mail: %w", template, err)
	}
	if _, err := outbox.Enqueue(ctx, tx, outbox.Delivery{
		Kind: outbox.KindIdentityMail, WorkspaceID: deref(inv.WorkspaceID), Payload: payload, Sealed: sealed,
	}); err != nil {
		return err
	}
	return nil
}

// CheckConfirmation returns what a confirmation link would accept:
// ErrConfirmationUnknown or ErrConfirmationExpired for a link that cannot be
// used, ErrAccepted, ErrRevoked or ErrExpired for its invitation.
func (s *Service) CheckConfirmation(ctx context.Context, token string) (Preview, error) {
	if !wellFormed(token) {
		return Preview{}, ErrConfirmationUnknown
	}
	row, err := s.q.InvitationConfirmationGetByTokenHash(ctx, s.pool, hashToken(token))
	if dbx.IsNotFound(err) {
		return Preview{}, ErrConfirmationUnknown
	}
	if err != nil {
		return Preview{}, dbx.Translate(err, "invitation confirmation")
	}
	switch {
	case row.AcceptedAt != nil:
		return Preview{}, ErrAccepted
	case row.RevokedAt != nil:
		return Preview{}, ErrRevoked
	case row.InvitationExpired:
		return Preview{}, ErrExpired
	case row.Expired:
		return Preview{}, ErrConfirmationExpired
	}
	return Preview{
		Email: row.Email, Role: row.Role, OrganizationName: row.OrganizationName, WorkspaceName: derefString(row.WorkspaceName),
		InvitedBy: row.InvitedBy, ExpiresAt: row.ExpiresAt,
	}, nil
}

// Confirm follows a confirmation link: it creates the account of the
// invitation's address with the password given at acceptance and accepts the
// invitation, in one transaction that also deletes the pending acceptance, so
// the link works once. Should the address have gained an account meanwhile,
// that account joins: the link proves its owner receives the address's mail,
// which a password reset would accept as well. Errors are CheckConfirmation's.
func (s *Service) Confirm(ctx context.Context, token string) (AcceptResult, error) {
	if !wellFormed(token) {
		return AcceptResult{}, ErrConfirmationUnknown
	}
	res, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (AcceptResult, error) {
		c, err := s.q.InvitationConfirmationTake(ctx, tx, hashToken(token))
		if dbx.IsNotFound(err) {
			return AcceptResult{}, ErrConfirmationUnknown
		}
		if err != nil {
			return AcceptResult{}, err
		}
		cur, err := s.q.InvitationGetByIDForUpdate(ctx, tx, c.InvitationID)
		if err != nil {
			return AcceptResult{}, notFound(err)
		}
		if err := usable(cur.Invitation, cur.Expired); err != nil {
			return AcceptResult{}, err
		}
		if c.Expired {
			return AcceptResult{}, ErrConfirmationExpired
		}
		return s.accept(ctx, tx, cur.Invitation, cur.Expired, c.DisplayName, &c.PasswordHash)
	})
	if err != nil {
		return AcceptResult{}, err
	}
	s.forget()
	return res, nil
}
