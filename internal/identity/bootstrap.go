// Package identity holds organizations, workspaces, user accounts, principals,
// memberships and API keys: who may act, and where.
package identity

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/password"
)

// ErrAlreadyInitialized means bootstrap found an organization already.
var ErrAlreadyInitialized = errors.New("svc is already initialized: an organization exists; bootstrap changed nothing")

// bootstrapLockID serializes bootstraps so that exactly one of concurrent runs wins.
const bootstrapLockID int64 = 0x7376635f626f6f74 // "svc_boot"

// BootstrapInput is the first administrator.
type BootstrapInput struct {
	Email    string
	Password string
}

// Validate checks the e-mail address and the password.
func (in BootstrapInput) Validate() error {
	if err := ValidateEmail(in.Email); err != nil {
		return err
	}
	if err := password.Validate(in.Password); err != nil {
		return apperr.InvalidField("password", err.Error())
	}
	return nil
}

// BootstrapResult is what bootstrap prints.
type BootstrapResult struct {
	OrganizationID string `json:"organization_id"`
	WorkspaceID    string `json:"workspace_id"`
	UserID         string `json:"user_id"`
	PrincipalID    string `json:"principal_id"`
	APIKey         string `json:"api_key"`
}

// Bootstrap creates the first organization, workspace and administrator (owner of
// the organization, admin of the workspace) and a first admin API key, in one
// transaction. It returns ErrAlreadyInitialized, changing nothing, when any
// organization exists.
func Bootstrap(ctx context.Context, pool *pgxpool.Pool, in BootstrapInput) (BootstrapResult, error) {
	if err := in.Validate(); err != nil {
		return BootstrapResult{}, err
	}
	// Hash before the transaction: it takes about 100 ms of CPU.
	hash, err := password.Hash(in.Password)
	if err != nil {
		return BootstrapResult{}, err
	}
	token, err := auth.NewToken()
	if err != nil {
		return BootstrapResult{}, err
	}
	return dbx.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (BootstrapResult, error) {
		q := db.New()
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", bootstrapLockID); err != nil {
			return BootstrapResult{}, err
		}
		exists, err := q.OrganizationAnyExists(ctx, tx)
		if err != nil {
			return BootstrapResult{}, err
		}
		if exists {
			return BootstrapResult{}, ErrAlreadyInitialized
		}
		email := strings.TrimSpace(in.Email)
		res, err := createAdmin(ctx, tx, q, email, &hash, token)
		if err != nil {
			return BootstrapResult{}, err
		}
		res.APIKey = token.Secret
		return res, nil
	})
}

// createAdmin writes the organization, workspace, user, memberships, key and
// their audit events.
func createAdmin(ctx context.Context, tx pgx.Tx, q *db.Queries, email string, hash *string, token auth.Token) (BootstrapResult, error) {
	org, err := q.OrganizationInsert(ctx, tx, db.OrganizationInsertParams{ID: id.New(id.Organization), Name: "Default organization"})
	if err != nil {
		return BootstrapResult{}, err
	}
	pri, err := q.PrincipalInsert(ctx, tx, db.PrincipalInsertParams{ID: id.New(id.Principal), Kind: "user", DisplayName: email})
	if err != nil {
		return BootstrapResult{}, err
	}
	user, err := q.UserInsert(ctx, tx, db.UserInsertParams{ID: id.New(id.User), PrincipalID: pri.ID, Email: email, PasswordHash: hash})
	if err != nil {
		return BootstrapResult{}, dbx.Translate(err, "user")
	}
	ws, err := q.WorkspaceInsert(ctx, tx, db.WorkspaceInsertParams{ID: id.New(id.Workspace), OrganizationID: org.ID, Name: "Default workspace", CreatedByID: pri.ID})
	if err != nil {
		return BootstrapResult{}, err
	}
	if _, err := q.OrganizationMemberInsert(ctx, tx, db.OrganizationMemberInsertParams{OrganizationID: org.ID, PrincipalID: pri.ID, Role: auth.OrgOwner}); err != nil {
		return BootstrapResult{}, err
	}
	if _, err := q.WorkspaceMemberInsert(ctx, tx, db.WorkspaceMemberInsertParams{WorkspaceID: ws.ID, PrincipalID: pri.ID, Role: auth.RoleAdmin}); err != nil {
		return BootstrapResult{}, err
	}
	key, err := q.APIKeyCreate(ctx, tx, db.APIKeyCreateParams{
		ID: id.New(id.APIKey), WorkspaceID: ws.ID, PrincipalID: pri.ID, Name: "bootstrap", Role: auth.RoleAdmin,
		TokenHash: token.Hash, Prefix: token.Prefix, CreatedByID: pri.ID,
	})
	if err != nil {
		return BootstrapResult{}, err
	}
	for _, e := range []audit.Event{
		{OrganizationID: org.ID, Action: "organization.created", SubjectType: "organization", SubjectID: org.ID, Version: &org.Version},
		{OrganizationID: org.ID, Action: "user.created", SubjectType: "user", SubjectID: user.ID, Version: &user.Version},
		{OrganizationID: org.ID, WorkspaceID: ws.ID, Action: "workspace.created", SubjectType: "workspace", SubjectID: ws.ID, Version: &ws.Version},
		{OrganizationID: org.ID, WorkspaceID: ws.ID, Action: "api_key.created", SubjectType: "api_key", SubjectID: key.ID, Version: &key.Version},
	} {
		if err := audit.Record(ctx, tx, e); err != nil {
			return BootstrapResult{}, fmt.Errorf("audit: %w", err)
		}
	}
	return BootstrapResult{OrganizationID: org.ID, WorkspaceID: ws.ID, UserID: user.ID, PrincipalID: pri.ID}, nil
}

// ValidateEmail checks an address: one plain address (no display name), at most
// 254 bytes, whose domain has a dot or is localhost.
func ValidateEmail(email string) error {
	invalid := apperr.InvalidField("email", "not a valid e-mail address")
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email || len(email) > 254 {
		return invalid
	}
	domain := email[strings.LastIndexByte(email, '@')+1:]
	if !strings.Contains(domain, ".") && domain != "localhost" {
		return invalid
	}
	return nil
}
