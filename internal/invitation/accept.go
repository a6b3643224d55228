package invitation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/password"
	"github.com/svcdev/svc/internal/webhook"
)

// AcceptResult is an accepted invitation and the account that accepted it.
type AcceptResult struct {
	Invitation  Invitation
	UserID      string
	PrincipalID string
	// AccountCreated reports that accepting created the account (the address
	// had none), with the password given.
	AccountCreated bool
	// ConfirmationSent reports that the invitation is not accepted yet: a mail
	// went to the invitation's address (a confirmation link when it has no
	// account). The other fields are empty.
	ConfirmationSent bool
}

// Accept accepts the invitation a token stands for. The token is the credential
// for the invitation (no API key or session is needed), and Password for the
// account. The password of the address's existing account accepts at once (the
// account keeps its name, and is refused when disabled). Anything else sends a
// mail and answers ConfirmationSent, the same for both cases: a new address is
// mailed a confirmation link (Confirm then creates the account, a principal of
// kind user named DisplayName or the address, with an argon2id hash of
// Password); an existing account is left as it is and told of the attempt. So
// the token's holder, the inviter too, learns nothing about accounts and cannot
// create one for an address they do not receive mail at. The membership is
// added unless the principal already has one, whose role then stays as it is.
// Unknown tokens are ErrNotFound; revoked, expired and accepted invitations are
// ErrRevoked, ErrExpired and ErrAccepted.
//
// Attempts are rate limited per client address, per invitation from that
// client and per invitation (429 rate_limited), whether or not the address has
// an account. Both cases of a wrong or new password pay for one argon2id run,
// one transaction and one queued mail, so neither the answers nor their timing
// tell the token's holder whether the address has an account.
func (s *Service) Accept(ctx context.Context, in AcceptInput) (AcceptResult, error) {
	if err := in.Validate(); err != nil {
		return AcceptResult{}, err
	}
	if !wellFormed(in.Token) {
		return AcceptResult{}, ErrNotFound
	}
	if in.ClientAddr != "" {
		if err := s.limit(ctx, "address:"+in.ClientAddr, s.perAddr); err != nil {
			return AcceptResult{}, err
		}
	}
	hash := hashToken(in.Token)
	// A first look outside any transaction refuses unknown and spent tokens and a
	// missing password before paying for argon2id (about 100 ms of CPU), which
	// must not run while a transaction holds locks.
	pre, err := s.q.InvitationGetByTokenHash(ctx, s.pool, hash)
	if err != nil {
		return AcceptResult{}, notFound(err)
	}
	if err := usable(pre.Invitation, pre.Expired); err != nil {
		return AcceptResult{}, err
	}
	// The invitation from this client first, so that a refused client does not
	// use up the invitation's shared ceiling: a client that keeps guessing is
	// stopped early without holding back the invitee elsewhere.
	inv := "invitation:" + pre.Invitation.ID
	if in.ClientAddr != "" {
		if err := s.limit(ctx, inv+":client:"+in.ClientAddr, s.perInvCli); err != nil {
			return AcceptResult{}, err
		}
	}
	if err := s.limit(ctx, inv, s.perInv); err != nil {
		return AcceptResult{}, err
	}
	if in.Password == "" {
		return AcceptResult{}, ErrPasswordRequired
	}
	if pre.HasAccount {
		// An existing account joins only with its own password: the token alone
		// proves access to the invitation, not to the account. Any other
		// password is answered like a new address's, and the address is told.
		err := s.verifyAccountPassword(ctx, pre.Invitation.Email, in.Password)
		if errors.Is(err, ErrWrongPassword) {
			return s.mailAttempt(ctx, pre.Invitation, in.Token)
		}
		if err != nil {
			return AcceptResult{}, err
		}
		res, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (AcceptResult, error) {
			cur, err := s.q.InvitationGetByTokenHashForUpdate(ctx, tx, hash)
			if err != nil {
				return AcceptResult{}, notFound(err)
			}
			return s.accept(ctx, tx, cur.Invitation, cur.Expired, in.DisplayName, nil)
		})
		if err != nil {
			return AcceptResult{}, err
		}
		// The new membership changes what the invitee's keys may do: drop cached lookups.
		s.forget()
		return res, nil
	}
	// A new address gets its account only once the invitee proves they receive
	// its mail: the password waits, hashed, for the mailed link.
	h, err := password.Hash(in.Password)
	if err != nil {
		return AcceptResult{}, fmt.Errorf("hash password: %w", err)
	}
	return s.mailConfirmation(ctx, pre.Invitation, h, in.DisplayName)
}

// acceptWindow is the window of the acceptance rate limits.
const acceptWindow = time.Minute

// limit counts an acceptance attempt in the bucket invitation_accept:<name>,
// refusing with rate_limited over limit. Names hold no secret: a client
// address or an invitation id.
func (s *Service) limit(ctx context.Context, name string, limit int) error {
	if d := s.limiter.Allow(ctx, "invitation_accept:"+name, limit, acceptWindow); !d.Allowed {
		return apperr.RateLimited("too many attempts to accept an invitation; wait a moment and try again", d.RetryAfter)
	}
	return nil
}

// verifyAccountPassword checks pw against the account with the address email.
// An account without a password is checked against password.Unusable, so the
// refusal costs the same argon2id run as a wrong password.
func (s *Service) verifyAccountPassword(ctx context.Context, email, pw string) error {
	user, err := s.q.UserGetByEmail(ctx, s.pool, email)
	if err != nil {
		return dbx.Translate(err, "user")
	}
	hash := password.Unusable
	if user.PasswordHash != nil {
		hash = *user.PasswordHash
	}
	ok, err := password.Verify(pw, hash)
	if err != nil || !ok || user.PasswordHash == nil {
		return ErrWrongPassword
	}
	return nil
}

// accept does the acceptance of inv, read under its row lock in tx,
// re-checking what the first look saw: another acceptance or a revocation may
// have come between. pwHash is the new account's password hash when the
// address has no account; nil when the account's password was verified.
func (s *Service) accept(ctx context.Context, tx pgx.Tx, inv db.Invitation, expired bool, displayName string, pwHash *string) (AcceptResult, error) {
	if err := usable(inv, expired); err != nil {
		return AcceptResult{}, err
	}
	res := AcceptResult{}
	var events []audit.Event
	acct, err := s.q.InvitationAccountGet(ctx, tx, inv.Email)
	switch {
	case err == nil:
		if acct.DisabledAt != nil {
			return AcceptResult{}, ErrAccountDisabled
		}
		res.UserID, res.PrincipalID = acct.ID, acct.PrincipalID
	case dbx.IsNotFound(err):
		if pwHash == nil {
			// The first look saw an account that is gone now; accounts are never
			// deleted, so this needs a retry at most.
			return AcceptResult{}, ErrPasswordRequired
		}
		user, err := s.createAccount(ctx, tx, inv.Email, displayName, pwHash)
		if err != nil {
			return AcceptResult{}, err
		}
		res.UserID, res.PrincipalID, res.AccountCreated = user.ID, user.PrincipalID, true
		events = append(events, audit.Event{
			OrganizationID: inv.OrganizationID, ActorID: user.PrincipalID,
			Action: "user.created", SubjectType: "user", SubjectID: user.ID, Version: &user.Version,
		})
	default:
		return AcceptResult{}, err
	}
	joined, err := s.addMembership(ctx, tx, inv, res.PrincipalID)
	if err != nil {
		return AcceptResult{}, err
	}
	if joined != nil {
		events = append(events, *joined)
	}
	row, err := s.q.InvitationMarkAccepted(ctx, tx, db.InvitationMarkAcceptedParams{ID: inv.ID, PrincipalID: &res.PrincipalID})
	if err != nil {
		return AcceptResult{}, err
	}
	events = append(events, audit.Event{
		OrganizationID: row.OrganizationID, WorkspaceID: deref(row.WorkspaceID), ActorID: res.PrincipalID,
		Action: "invitation.accepted", SubjectType: "invitation", SubjectID: row.ID, Version: &row.Version,
		ChangedFields: []string{"accepted_at", "principal_id"},
	})
	for _, e := range events {
		if err := audit.Record(ctx, tx, e); err != nil {
			return AcceptResult{}, fmt.Errorf("audit %s: %w", e.Action, err)
		}
	}
	if err := emitAccepted(ctx, tx, row); err != nil {
		return AcceptResult{}, err
	}
	res.Invitation = fromRow(row)
	return res, nil
}

// emitAccepted emits the invitation.accepted webhook event of a workspace
// invitation to that workspace's subscribers, in tx. An organization
// invitation emits nothing: subscriptions belong to workspaces, and an
// organization's membership is not any one workspace's news.
func emitAccepted(ctx context.Context, tx pgx.Tx, row db.Invitation) error {
	if row.WorkspaceID == nil {
		return nil
	}
	var at time.Time
	if row.AcceptedAt != nil {
		at = *row.AcceptedAt
	}
	err := webhook.Emit(ctx, tx, *row.WorkspaceID, webhook.Event{Type: webhook.InvitationAccepted, Time: at, Data: map[string]any{
		"invitation_id": row.ID,
		"workspace_id":  *row.WorkspaceID,
		"email":         row.Email,
		"role":          row.Role,
		"principal_id":  deref(row.PrincipalID),
		"invited_by_id": row.InvitedByID,
	}})
	if err != nil {
		return fmt.Errorf("emit %s: %w", webhook.InvitationAccepted, err)
	}
	return nil
}

// createAccount makes the principal and user account of a new address. A
// concurrent acceptance of another invitation for the same new address loses
// on the unique e-mail index and is answered already_exists; retrying succeeds.
func (s *Service) createAccount(ctx context.Context, tx pgx.Tx, email, displayName string, pwHash *string) (db.UserAccount, error) {
	if displayName == "" {
		displayName = email
	}
	pri, err := s.q.PrincipalInsert(ctx, tx, db.PrincipalInsertParams{ID: id.New(id.Principal), Kind: "user", DisplayName: displayName})
	if err != nil {
		return db.UserAccount{}, err
	}
	user, err := s.q.UserInsert(ctx, tx, db.UserInsertParams{ID: id.New(id.User), PrincipalID: pri.ID, Email: email, PasswordHash: pwHash})
	if err != nil {
		return db.UserAccount{}, dbx.Translate(err, "user")
	}
	return user, nil
}

// addMembership grants the invitation's role in its target, unless the
// principal is a member already: an invitation never changes an existing role
// (role changes go through the members API with If-Match). It returns the audit
// event of a new membership, or nil.
func (s *Service) addMembership(ctx context.Context, tx pgx.Tx, inv db.Invitation, principalID string) (*audit.Event, error) {
	version := int32(1)
	if inv.WorkspaceID != nil {
		n, err := s.q.WorkspaceMemberAddFromInvitation(ctx, tx, db.WorkspaceMemberAddFromInvitationParams{
			WorkspaceID: *inv.WorkspaceID, PrincipalID: principalID, Role: inv.Role,
		})
		if err != nil || n == 0 {
			return nil, err
		}
		return &audit.Event{
			OrganizationID: inv.OrganizationID, WorkspaceID: *inv.WorkspaceID, ActorID: principalID,
			Action: "member.created", SubjectType: "member", SubjectID: principalID, Version: &version,
		}, nil
	}
	n, err := s.q.OrganizationMemberAddFromInvitation(ctx, tx, db.OrganizationMemberAddFromInvitationParams{
		OrganizationID: inv.OrganizationID, PrincipalID: principalID, Role: inv.Role,
	})
	if err != nil || n == 0 {
		return nil, err
	}
	return &audit.Event{
		OrganizationID: inv.OrganizationID, ActorID: principalID,
		Action: "organization_member.created", SubjectType: "organization_member", SubjectID: principalID, Version: &version,
	}, nil
}

// usable reports why an invitation cannot be accepted, if it cannot. Acceptance
// is checked first: a used token is "used" even after it would have expired.
func usable(inv db.Invitation, expired bool) error {
	switch {
	case inv.AcceptedAt != nil:
		return ErrAccepted
	case inv.RevokedAt != nil:
		return ErrRevoked
	case expired:
		return ErrExpired
	}
	return nil
}
