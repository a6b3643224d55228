// Package invitation invites people into an organization or one of its
// workspaces: creation (with the invitation mail queued in the outbox), listing,
// reading, revocation, and acceptance by token, which creates the account when
// the address has none and adds the membership.
//
// An invitation's token is its only credential: 256 random bits, shown once in
// the invitation URL and sealed in the outbox for the mail, and stored only as
// its SHA-256. Invitations of another organization or workspace answer exactly
// like absent ones (404), so ids cannot be probed across tenants.
package invitation

import (
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/ratelimit"
)

// Invitation is an invitation as clients see it.
type Invitation struct {
	ID             string
	OrganizationID string
	WorkspaceID    *string // nil for organization invitations
	Email          string
	Role           string
	PrincipalID    *string // the invitee's principal once known
	InvitedByID    string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	ExpiresAt      time.Time
	AcceptedAt     *time.Time
	RevokedAt      *time.Time
	Version        int32
}

// Options are what a Service is built from.
type Options struct {
	Pool    *pgxpool.Pool
	Keyring *keyring.Ring
	// PublicURL is the service's public base URL (server.public_url); invitation
	// URLs point at its console page /invitations/accept.
	PublicURL string
	// TTL is how long an invitation can be accepted (auth.invitation_ttl_seconds).
	TTL time.Duration
	// ConfirmationTTL is how long the link mailed to confirm a new address's
	// acceptance works (auth.invitation_confirmation_ttl_seconds).
	ConfirmationTTL time.Duration
	// ForgetFunc drops cached API-key lookups after a membership change, so that
	// new roles apply at once (auth.Authenticator.Forget). May be nil.
	ForgetFunc func()
	// Limiter counts acceptance attempts; nil: no limits.
	Limiter *ratelimit.Limiter
	// Attempts to accept per minute: per client address
	// (limits.invitation_accept_per_address_per_minute), per invitation from
	// one client (limits.invitation_accept_per_invitation_per_client_per_minute)
	// and per invitation from all clients
	// (limits.invitation_accept_per_invitation_per_minute).
	AcceptPerAddressPerMinute             int
	AcceptPerInvitationPerClientPerMinute int
	AcceptPerInvitationPerMinute          int
}

// Service manages invitations. It owns its transactions.
type Service struct {
	pool       *pgxpool.Pool
	q          *db.Queries
	ring       *keyring.Ring
	publicURL  string
	ttlSeconds float64
	confirmTTL time.Duration
	forget     func()
	limiter    *ratelimit.Limiter
	perAddr    int
	perInvCli  int
	perInv     int
}

// NewService returns a service over o.
func NewService(o Options) (*Service, error) {
	switch {
	case o.Pool == nil:
		return nil, errors.New("invitation: a database pool is required")
	case o.Keyring == nil:
		return nil, errors.New("invitation: a key ring is required")
	case o.PublicURL == "":
		return nil, errors.New("invitation: the public URL is required")
	case o.TTL < time.Second:
		return nil, errors.New("invitation: the TTL must be at least a second")
	case o.ConfirmationTTL < time.Second:
		return nil, errors.New("invitation: the confirmation TTL must be at least a second")
	}
	forget := o.ForgetFunc
	if forget == nil {
		forget = func() {}
	}
	return &Service{
		pool:       o.Pool,
		q:          db.New(),
		ring:       o.Keyring,
		publicURL:  strings.TrimRight(o.PublicURL, "/"),
		ttlSeconds: o.TTL.Seconds(),
		confirmTTL: o.ConfirmationTTL,
		forget:     forget,
		limiter:    o.Limiter,
		perAddr:    o.AcceptPerAddressPerMinute,
		perInvCli:  o.AcceptPerInvitationPerClientPerMinute,
		perInv:     o.AcceptPerInvitationPerMinute,
	}, nil
}

// fromRow maps a stored invitation to its view; the token hash stays inside.
func fromRow(r db.Invitation) Invitation {
	return Invitation{
		ID:             r.ID,
		OrganizationID: r.OrganizationID,
		WorkspaceID:    r.WorkspaceID,
		Email:          r.Email,
		Role:           r.Role,
		PrincipalID:    r.PrincipalID,
		InvitedByID:    r.InvitedByID,
		CreatedAt:      r.CreatedAt,
		UpdatedAt:      r.UpdatedAt,
		ExpiresAt:      r.ExpiresAt,
		AcceptedAt:     r.AcceptedAt,
		RevokedAt:      r.RevokedAt,
		Version:        r.Version,
	}
}
