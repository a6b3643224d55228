// Package testfactory makes the rows tests start from: identities and keys,
// providers, models, agents, threads and runs, environment templates and
// environments, subscriptions and deliveries. Each factory takes an options
// struct whose zero members take defaults, so a test names only what it is
// about (River's testfactory is the model). Factories write through the
// generated queries where one exists; where a test needs a state no query
// writes (a settled delivery, an environment in a given status), the factory
// owns that SQL, so tests hold none. Import it only from tests.
package testfactory

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/identity"
	"github.com/svcdev/svc/internal/password"
)

// Admin is a bootstrapped deployment: its first organization, workspace and admin.
type Admin struct {
	identity.BootstrapResult
	Email string
}

// Owner is the workspace a fixture belongs to and the principal recorded
// as having made it.
type Owner struct {
	WorkspaceID string
	PrincipalID string
}

// Owner is the admin's workspace and principal.
func (a Admin) Owner() Owner { return Owner{WorkspaceID: a.WorkspaceID, PrincipalID: a.PrincipalID} }

// Caller is a caller of the admin's workspace acting as the admin's
// principal with role (auth.RoleViewer ... auth.RoleAdmin).
func (a Admin) Caller(role string) *auth.Caller {
	return &auth.Caller{PrincipalID: a.PrincipalID, OrganizationID: a.OrganizationID, WorkspaceID: a.WorkspaceID, Role: role}
}

// OwnerOf is the caller's workspace and principal.
func OwnerOf(c *auth.Caller) Owner {
	return Owner{WorkspaceID: c.WorkspaceID, PrincipalID: c.PrincipalID}
}

func (o Owner) check(tb testing.TB, what string) {
	tb.Helper()
	if o.WorkspaceID == "" || o.PrincipalID == "" {
		tb.Fatalf("testfactory: %s needs an owner's workspace and principal", what)
	}
}

// Bootstrap initializes the database of pool with admin@example.com.
func Bootstrap(t testing.TB, pool *pgxpool.Pool) Admin {
	t.Helper()
	res, err := identity.Bootstrap(context.Background(), pool, identity.BootstrapInput{Email: "admin@example.com", Password: "correct horse battery"})
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	return Admin{BootstrapResult: res, Email: "admin@example.com"}
}

// MemberOpts describes a member to add to a workspace.
type MemberOpts struct {
	Email            string // default: a unique address
	WorkspaceRole    string // "" for no workspace membership
	OrganizationRole string // "" for no organization membership
	KeyRole          string // default: WorkspaceRole, else viewer
	Service          bool   // a service principal instead of a user
	Password         string // the user's password; "" for an account without one
}

// Member is a principal with an API key in a workspace.
type Member struct {
	PrincipalID string
	UserID      string
	Email       string
	KeyID       string
	Token       string
}

// JoinWorkspace makes principalID a member of workspaceID with role.
func JoinWorkspace(tb testing.TB, q db.DBTX, workspaceID, principalID, role string) {
	tb.Helper()
	if _, err := db.New().WorkspaceMemberInsert(context.Background(), q, db.WorkspaceMemberInsertParams{
		WorkspaceID: workspaceID, PrincipalID: principalID, Role: role,
	}); err != nil {
		tb.Fatalf("testfactory: workspace member: %v", err)
	}
}

// AddMember adds a principal to the workspace (and its organization) with a key.
func AddMember(t testing.TB, pool *pgxpool.Pool, organizationID, workspaceID string, o MemberOpts) Member {
	t.Helper()
	ctx := context.Background()
	q := db.New()
	if o.Email == "" {
		o.Email = "user-" + id.New("x")[2:] + "@example.com"
	}
	kind := "user"
	if o.Service {
		kind = "service"
	}
	pri, err := q.PrincipalInsert(ctx, pool, db.PrincipalInsertParams{ID: id.New(id.Principal), Kind: kind, DisplayName: o.Email})
	if err != nil {
		t.Fatalf("principal: %v", err)
	}
	m := Member{PrincipalID: pri.ID}
	if !o.Service {
		var hash *string
		if o.Password != "" {
			h, err := password.Hash(o.Password)
			if err != nil {
				t.Fatal(err)
			}
			hash = &h
		}
		u, err := q.UserInsert(ctx, pool, db.UserInsertParams{ID: id.New(id.User), PrincipalID: pri.ID, Email: o.Email, PasswordHash: hash})
		if err != nil {
			t.Fatalf("user: %v", err)
		}
		m.UserID, m.Email = u.ID, u.Email
	}
	if o.OrganizationRole != "" {
		if _, err := q.OrganizationMemberInsert(ctx, pool, db.OrganizationMemberInsertParams{OrganizationID: organizationID, PrincipalID: pri.ID, Role: o.OrganizationRole}); err != nil {
			t.Fatalf("organization member: %v", err)
		}
	}
	if o.WorkspaceRole != "" {
		if _, err := q.WorkspaceMemberInsert(ctx, pool, db.WorkspaceMemberInsertParams{WorkspaceID: workspaceID, PrincipalID: pri.ID, Role: o.WorkspaceRole}); err != nil {
			t.Fatalf("workspace member: %v", err)
		}
	}
	keyRole := o.KeyRole
	if keyRole == "" {
		keyRole = o.WorkspaceRole
	}
	if keyRole == "" {
		keyRole = auth.RoleViewer
	}
	tok, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	key, err := q.APIKeyCreate(ctx, pool, db.APIKeyCreateParams{
		ID: id.New(id.APIKey), WorkspaceID: workspaceID, PrincipalID: pri.ID, Name: "test", Role: keyRole,
		TokenHash: tok.Hash, Prefix: tok.Prefix, CreatedByID: pri.ID,
	})
	if err != nil {
		t.Fatalf("api key: %v", err)
	}
	m.KeyID, m.Token = key.ID, tok.Secret
	return m
}
