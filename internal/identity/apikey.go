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
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/resource"
)

// APIKey is an API key as it may be shown: never its token or hash.
type APIKey struct {
	ID          string
	WorkspaceID string
	PrincipalID string
	Name        string
	Prefix      string
	Role        string
	ExpiresAt   *time.Time
	LastUsedAt  *time.Time
	RevokedAt   *time.Time
	Version     int32
	CreatedByID string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// ETag is the key's entity tag.
func (k APIKey) ETag() string { return resource.ETag(k.ID, k.Version) }

func apiKeyOf(r db.ApiKey) APIKey {
	return APIKey{
		ID: r.ID, WorkspaceID: r.WorkspaceID, PrincipalID: r.PrincipalID, Name: r.Name, Prefix: r.Prefix, Role: r.Role,
		ExpiresAt: r.ExpiresAt, LastUsedAt: r.LastUsedAt, RevokedAt: r.RevokedAt, Version: r.Version,
		CreatedByID: r.CreatedByID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// CreateAPIKeyInput describes a new key of the caller's principal in the caller's
// workspace.
type CreateAPIKeyInput struct {
	Name      string
	Role      string
	ExpiresAt *time.Time // nil: never expires; else it must be in the future
}

// Validate checks the name and role; the expiry is checked against the
// database's clock when the key is written.
func (in CreateAPIKeyInput) Validate() error {
	if err := validateName("name", in.Name); err != nil {
		return err
	}
	return validateRole(in.Role)
}

// CreatedAPIKey is a new key and its token, shown once.
type CreatedAPIKey struct {
	APIKey APIKey
	Token  string
}

var errExpiryInPast = apperr.InvalidField("expires_at", "must be in the future")

// CreateAPIKey makes a key for the caller's principal in the caller's workspace.
// Its role may not exceed the role the caller acts with, so a key never grants
// more than the request that made it had.
func (s *Service) CreateAPIKey(ctx context.Context, c *auth.Caller, in CreateAPIKeyInput) (CreatedAPIKey, error) {
	if err := auth.Require(c, auth.PermAdmin); err != nil {
		return CreatedAPIKey{}, err
	}
	return s.createAPIKey(ctx, c, in)
}

// CreatePersonalAPIKey makes a key for a signed-in person in the workspace
// they act in, with a role up to their own: any member may, but only from a
// console session, never with an API key, so a leaked key cannot mint
// others (docs/decisions/0050-console.md).
func (s *Service) CreatePersonalAPIKey(ctx context.Context, c *auth.Caller, in CreateAPIKeyInput) (CreatedAPIKey, error) {
	if err := requirePerson(c); err != nil {
		return CreatedAPIKey{}, err
	}
	return s.createAPIKey(ctx, c, in)
}

// requirePerson refuses a caller that is not a signed-in person (an API key,
// or no caller), whatever its role.
func requirePerson(c *auth.Caller) error {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return err
	}
	if c.UserID == "" || c.KeyID != "" {
		return apperr.New(apperr.KindPermissionDenied, "personal API keys are managed by a signed-in person in the console")
	}
	return nil
}

func (s *Service) createAPIKey(ctx context.Context, c *auth.Caller, in CreateAPIKeyInput) (CreatedAPIKey, error) {
	if err := in.Validate(); err != nil {
		return CreatedAPIKey{}, err
	}
	if !roleAtMost(in.Role, c.Role) {
		return CreatedAPIKey{}, apperr.New(apperr.KindPermissionDenied, "a key's role cannot be higher than the role of the key that creates it ("+c.Role+")")
	}
	token, err := auth.NewToken()
	if err != nil {
		return CreatedAPIKey{}, err
	}
	var expires *time.Time
	if in.ExpiresAt != nil {
		t := in.ExpiresAt.UTC()
		expires = &t
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (CreatedAPIKey, error) {
		row, err := s.q.APIKeyCreate(ctx, tx, db.APIKeyCreateParams{
			ID: id.New(id.APIKey), WorkspaceID: c.WorkspaceID, PrincipalID: c.PrincipalID, Name: in.Name, Role: in.Role,
			TokenHash: token.Hash, Prefix: token.Prefix, ExpiresAt: expires, CreatedByID: c.PrincipalID,
		})
		if dbx.IsNotFound(err) {
			return CreatedAPIKey{}, errExpiryInPast
		}
		if err != nil {
			return CreatedAPIKey{}, err
		}
		fields := []string{"name", "role"}
		if expires != nil {
			fields = append(fields, "expires_at")
		}
		if err := audit.Record(ctx, tx, audit.Event{
			OrganizationID: c.OrganizationID, WorkspaceID: c.WorkspaceID, ActorID: c.PrincipalID,
			Action: "api_key.created", SubjectType: "api_key", SubjectID: row.ID, Version: &row.Version, ChangedFields: fields,
		}); err != nil {
			return CreatedAPIKey{}, err
		}
		return CreatedAPIKey{APIKey: apiKeyOf(row), Token: token.Secret}, nil
	})
}

// ListAPIKeys lists the keys of the caller's workspace, newest first.
func (s *Service) ListAPIKeys(ctx context.Context, c *auth.Caller, in PageInput) (Page[APIKey], error) {
	if err := auth.Require(c, auth.PermAdmin); err != nil {
		return Page[APIKey]{}, err
	}
	p, err := in.parse()
	if err != nil {
		return Page[APIKey]{}, err
	}
	return s.listAPIKeys(ctx, c, p, nil)
}

// ListPersonalAPIKeys lists the signed-in person's own keys in the workspace
// they act in, newest first.
func (s *Service) ListPersonalAPIKeys(ctx context.Context, c *auth.Caller, in PageInput) (Page[APIKey], error) {
	if err := requirePerson(c); err != nil {
		return Page[APIKey]{}, err
	}
	p, err := in.parse()
	if err != nil {
		return Page[APIKey]{}, err
	}
	return s.listAPIKeys(ctx, c, p, &c.PrincipalID)
}

func (s *Service) listAPIKeys(ctx context.Context, c *auth.Caller, p page, principalID *string) (Page[APIKey], error) {
	rows, err := s.q.APIKeyListByWorkspace(ctx, s.pool, db.APIKeyListByWorkspaceParams{
		WorkspaceID: c.WorkspaceID, AfterID: p.afterID, PageLimit: resource.Fetch(p.limit), PrincipalID: principalID,
	})
	if err != nil {
		return Page[APIKey]{}, dbx.Translate(err, "api key")
	}
	return resource.PageOf(rows, p.limit, apiKeyOf, func(r db.ApiKey) string { return r.ID }), nil
}

// RevokeAPIKeyInput names the key to revoke.
type RevokeAPIKeyInput struct {
	ID      string
	IfMatch *string
}

// RevokeAPIKey revokes a key of the caller's workspace; it is refused at once in
// this process and within auth.CacheTTL in others. Revoking a revoked key changes
// nothing and answers it as it is.
func (s *Service) RevokeAPIKey(ctx context.Context, c *auth.Caller, in RevokeAPIKeyInput) (APIKey, error) {
	if err := auth.Require(c, auth.PermAdmin); err != nil {
		return APIKey{}, err
	}
	return s.revokeAPIKey(ctx, c, in, false)
}

// RevokePersonalAPIKey revokes one of the signed-in person's own keys in the
// workspace they act in; another principal's key is not found.
func (s *Service) RevokePersonalAPIKey(ctx context.Context, c *auth.Caller, in RevokeAPIKeyInput) (APIKey, error) {
	if err := requirePerson(c); err != nil {
		return APIKey{}, err
	}
	return s.revokeAPIKey(ctx, c, in, true)
}

func (s *Service) revokeAPIKey(ctx context.Context, c *auth.Caller, in RevokeAPIKeyInput, ownOnly bool) (APIKey, error) {
	var changed bool
	key, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (APIKey, error) {
		row, err := s.q.APIKeyGetForUpdate(ctx, tx, db.APIKeyGetForUpdateParams{WorkspaceID: c.WorkspaceID, ID: in.ID})
		if err == nil && ownOnly && row.PrincipalID != c.PrincipalID {
			err = pgx.ErrNoRows
		}
		if err != nil {
			return APIKey{}, dbx.Translate(err, "api key")
		}
		if err := resource.CheckIfMatch(in.IfMatch, row.ID, row.Version); err != nil {
			return APIKey{}, err
		}
		if row.RevokedAt != nil {
			return apiKeyOf(row), nil
		}
		row, err = s.q.APIKeyRevoke(ctx, tx, row.ID)
		if err != nil {
			return APIKey{}, err
		}
		changed = true
		return apiKeyOf(row), audit.Record(ctx, tx, audit.Event{
			OrganizationID: c.OrganizationID, WorkspaceID: c.WorkspaceID, ActorID: c.PrincipalID,
			Action: "api_key.revoked", SubjectType: "api_key", SubjectID: row.ID, Version: &row.Version, ChangedFields: []string{"revoked_at"},
		})
	})
	if err == nil && changed {
		s.forget()
	}
	return key, err
}
