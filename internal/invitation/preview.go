package invitation

import (
	"context"
	"time"

	"github.com/svcdev/svc/internal/dbx"
)

// Preview is what the console shows of an invitation before the invitee
// accepts it: what is being accepted. It does not say whether the address has
// an account: whoever holds the token (the inviter too) sees the same page.
type Preview struct {
	Email            string
	Role             string
	OrganizationName string
	WorkspaceName    string // "" for an organization invitation
	InvitedBy        string
	ExpiresAt        time.Time
}

// Preview returns the invitation a token stands for, with the errors of Accept:
// ErrNotFound for a malformed or unknown token, ErrAccepted, ErrRevoked or
// ErrExpired for a spent one.
func (s *Service) Preview(ctx context.Context, token string) (Preview, error) {
	if !wellFormed(token) {
		return Preview{}, ErrNotFound
	}
	row, err := s.q.InvitationPreviewByTokenHash(ctx, s.pool, hashToken(token))
	if dbx.IsNotFound(err) {
		return Preview{}, ErrNotFound
	}
	if err != nil {
		return Preview{}, dbx.Translate(err, "invitation")
	}
	// The same order as Accept: a used token is "accepted" even once expired.
	switch {
	case row.AcceptedAt != nil:
		return Preview{}, ErrAccepted
	case row.RevokedAt != nil:
		return Preview{}, ErrRevoked
	case row.Expired:
		return Preview{}, ErrExpired
	}
	return Preview{
		Email: row.Email, Role: row.Role, OrganizationName: row.OrganizationName, WorkspaceName: derefString(row.WorkspaceName),
		InvitedBy: row.InvitedBy, ExpiresAt: row.ExpiresAt,
	}, nil
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
