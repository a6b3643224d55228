package session

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/identity"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/password"
)

// Mail link purposes (mail_link.purpose) and the mail template of each.
const (
	PurposePasswordReset = "password_reset"
	// TemplatePasswordReset names the identity_mail template of a reset link.
	TemplatePasswordReset = "password_reset"
)

// ResetMailPayload is the clear payload of a password reset identity_mail
// delivery. The link itself is sealed (ResetMailSecret) with additional data
// MailAAD(MailLinkID).
type ResetMailPayload struct {
	Template   string    `json:"template"`
	To         string    `json:"to"`
	UserID     string    `json:"user_id"`
	MailLinkID string    `json:"mail_link_id"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// ResetMailSecret is the sealed part of a password reset delivery.
type ResetMailSecret struct {
	ResetURL string `json:"reset_url"`
}

// MailAAD is the additional data a mail link's sealed secret is bound to.
func MailAAD(mailLinkID string) []byte { return []byte("identity_mail:" + mailLinkID) }

// ResetRequestInput asks for a password reset link by mail.
type ResetRequestInput struct {
	Email      string
	ClientAddr string
}

// Validate checks the address's form.
func (in ResetRequestInput) Validate() error {
	return identity.ValidateEmail(strings.TrimSpace(in.Email))
}

// RequestPasswordReset mails a password reset link when the address has an
// enabled account, and does nothing otherwise: the caller answers the same
// either way, so the form does not reveal which addresses have accounts. The
// link and its mail are written in one transaction. Requests count against the
// sign-in rate limits (in buckets of their own), so the form cannot flood an
// inbox.
func (s *Service) RequestPasswordReset(ctx context.Context, in ResetRequestInput) error {
	if err := in.Validate(); err != nil {
		return err
	}
	email := strings.TrimSpace(in.Email)
	if err := s.limit(ctx, PurposePasswordReset, email, in.ClientAddr); err != nil {
		return err
	}
	user, err := s.q.UserGetByEmail(ctx, s.o.Pool, email)
	if dbx.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return dbx.Translate(err, "user")
	}
	if user.DisabledAt != nil {
		return nil
	}
	token, hash, err := newSecret()
	if err != nil {
		return err
	}
	return dbx.WithTx(ctx, s.o.Pool, func(ctx context.Context, tx pgx.Tx) error {
		link, err := s.q.MailLinkInsert(ctx, tx, db.MailLinkInsertParams{
			ID: id.New(id.MailLink), UserID: user.ID, Purpose: PurposePasswordReset, TokenHash: hash, TtlSeconds: seconds(s.o.MailLinkTTL),
		})
		if err != nil {
			return err
		}
		secret, err := json.Marshal(ResetMailSecret{ResetURL: s.o.PublicURL + "/password/reset?token=" + url.QueryEscape(token)})
		if err != nil {
			return err
		}
		sealed, err := s.o.Keyring.Seal(secret, MailAAD(link.ID))
		if err != nil {
			return fmt.Errorf("seal reset link: %w", err)
		}
		_, err = outbox.Enqueue(ctx, tx, outbox.Delivery{
			Kind: outbox.KindIdentityMail,
			Payload: ResetMailPayload{
				Template: TemplatePasswordReset, To: user.Email, UserID: user.ID, MailLinkID: link.ID, ExpiresAt: link.ExpiresAt.UTC(),
			},
			Sealed: sealed,
		})
		return err
	})
}

// ResetLink is a usable password reset link.
type ResetLink struct {
	Email     string
	ExpiresAt time.Time
}

// CheckResetLink tells whether a reset link can still be used: ErrLinkUnknown
// for a missing, malformed or unknown token, ErrLinkSpent for a used, revoked or
// expired link or a disabled account.
func (s *Service) CheckResetLink(ctx context.Context, token string) (ResetLink, error) {
	if !WellFormed(token) {
		return ResetLink{}, ErrLinkUnknown
	}
	row, err := s.q.MailLinkGetByHash(ctx, s.o.Pool, db.MailLinkGetByHashParams{TokenHash: hashSecret(token), Purpose: PurposePasswordReset})
	if err != nil {
		return ResetLink{}, linkErr(err)
	}
	if !row.Usable {
		return ResetLink{}, ErrLinkSpent
	}
	return ResetLink{Email: row.Email, ExpiresAt: row.ExpiresAt}, nil
}

// ResetPasswordInput sets a new password with a reset link. Confirmation is the
// password typed a second time.
type ResetPasswordInput struct {
	Token        string
	Password     string
	Confirmation string
}

// Validate checks the new password; the token is checked against the database.
func (in ResetPasswordInput) Validate() error {
	if err := password.Validate(in.Password); err != nil {
		return apperr.InvalidField("password", err.Error())
	}
	if in.Confirmation != in.Password {
		return apperr.InvalidField("password_confirmation", "the two passwords differ")
	}
	return nil
}

// ResetPassword sets the account's new password, spends the link (and revokes
// the account's other reset links), and revokes every session of the account,
// so whoever knew the old password is signed out. It is audited as
// user.password_reset.
func (s *Service) ResetPassword(ctx context.Context, in ResetPasswordInput) error {
	// The link is checked before validating and hashing: a spent link gets its
	// own answer whatever was typed, and junk costs no argon2id.
	if _, err := s.CheckResetLink(ctx, in.Token); err != nil {
		return err
	}
	if err := in.Validate(); err != nil {
		return err
	}
	pwHash, err := password.Hash(in.Password)
	if err != nil {
		return fmt.Errorf("hash password: %w", err)
	}
	return dbx.WithTx(ctx, s.o.Pool, func(ctx context.Context, tx pgx.Tx) error {
		link, err := s.q.MailLinkGetByHashForUpdate(ctx, tx, db.MailLinkGetByHashForUpdateParams{TokenHash: hashSecret(in.Token), Purpose: PurposePasswordReset})
		if err != nil {
			return linkErr(err)
		}
		if !link.Usable {
			return ErrLinkSpent // used by a concurrent request since the first look
		}
		version, err := s.q.UserSetPasswordHash(ctx, tx, db.UserSetPasswordHashParams{ID: link.UserID, PasswordHash: &pwHash})
		if err != nil {
			return err
		}
		if err := s.q.MailLinkMarkUsed(ctx, tx, link.ID); err != nil {
			return err
		}
		if err := s.q.MailLinkRevokeOthers(ctx, tx, db.MailLinkRevokeOthersParams{UserID: link.UserID, Purpose: PurposePasswordReset, ID: link.ID}); err != nil {
			return err
		}
		if _, err := s.q.LoginSessionRevokeByUser(ctx, tx, link.UserID); err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.Event{
			ActorID: link.PrincipalID, Action: "user.password_reset", SubjectType: "user", SubjectID: link.UserID,
			Version: &version, ChangedFields: []string{"password"},
		})
	})
}

func linkErr(err error) error {
	if dbx.IsNotFound(err) {
		return ErrLinkUnknown
	}
	return dbx.Translate(err, "mail link")
}
