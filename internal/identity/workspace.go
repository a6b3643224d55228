package identity

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/resource"
)

// Workspace is a workspace of an organization.
type Workspace struct {
	ID             string
	OrganizationID string
	Name           string
	Version        int32
	CreatedByID    string
	UpdatedByID    string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// ETag is the workspace's entity tag.
func (w Workspace) ETag() string { return resource.ETag(w.ID, w.Version) }

func workspaceOf(r db.Workspace) Workspace {
	return Workspace{
		ID: r.ID, OrganizationID: r.OrganizationID, Name: r.Name, Version: r.Version,
		CreatedByID: r.CreatedByID, UpdatedByID: r.UpdatedByID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// CreateWorkspaceInput names a new workspace.
type CreateWorkspaceInput struct {
	Name string
}

// Validate checks the name.
func (in CreateWorkspaceInput) Validate() error { return validateName("name", in.Name) }

// CreatedWorkspace is a new workspace with the creator's first admin key in it.
type CreatedWorkspace struct {
	Workspace Workspace
	// Token is the secret of the new admin key, shown once.
	Token string
}

// CreateWorkspace creates a workspace in the caller's organization. The caller
// becomes its admin and gets a first admin key for it, so the new workspace can be
// used at once.
func (s *Service) CreateWorkspace(ctx context.Context, c *auth.Caller, in CreateWorkspaceInput) (CreatedWorkspace, error) {
	if err := auth.Require(c, auth.PermOrganizationAdmin); err != nil {
		return CreatedWorkspace{}, err
	}
	if err := in.Validate(); err != nil {
		return CreatedWorkspace{}, err
	}
	token, err := auth.NewToken()
	if err != nil {
		return CreatedWorkspace{}, err
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (CreatedWorkspace, error) {
		ws, err := s.q.WorkspaceInsert(ctx, tx, db.WorkspaceInsertParams{
			ID: id.New(id.Workspace), OrganizationID: c.OrganizationID, Name: in.Name, CreatedByID: c.PrincipalID,
		})
		if err != nil {
			return CreatedWorkspace{}, err
		}
		m, err := s.q.WorkspaceMemberInsert(ctx, tx, db.WorkspaceMemberInsertParams{WorkspaceID: ws.ID, PrincipalID: c.PrincipalID, Role: auth.RoleAdmin})
		if err != nil {
			return CreatedWorkspace{}, err
		}
		key, err := s.q.APIKeyCreate(ctx, tx, db.APIKeyCreateParams{
			ID: id.New(id.APIKey), WorkspaceID: ws.ID, PrincipalID: c.PrincipalID, Name: "workspace creator",
			Role: auth.RoleAdmin, TokenHash: token.Hash, Prefix: token.Prefix, CreatedByID: c.PrincipalID,
		})
		if err != nil {
			return CreatedWorkspace{}, err
		}
		events := []audit.Event{
			{Action: "workspace.created", SubjectType: "workspace", SubjectID: ws.ID, Version: &ws.Version, ChangedFields: []string{"name"}},
			{Action: "member.added", SubjectType: "member", SubjectID: c.PrincipalID, Version: &m.Version, ChangedFields: []string{"role"}},
			{Action: "api_key.created", SubjectType: "api_key", SubjectID: key.ID, Version: &key.Version, ChangedFields: []string{"name", "role"}},
		}
		for _, e := range events {
			e.OrganizationID, e.WorkspaceID, e.ActorID = c.OrganizationID, ws.ID, c.PrincipalID
			if err := audit.Record(ctx, tx, e); err != nil {
				return CreatedWorkspace{}, err
			}
		}
		return CreatedWorkspace{Workspace: workspaceOf(ws), Token: token.Secret}, nil
	})
}

// ListWorkspaces lists the workspaces of the caller's organization, newest first.
func (s *Service) ListWorkspaces(ctx context.Context, c *auth.Caller, in PageInput) (Page[Workspace], error) {
	if err := auth.Require(c, auth.PermOrganizationAdmin); err != nil {
		return Page[Workspace]{}, err
	}
	p, err := in.parse()
	if err != nil {
		return Page[Workspace]{}, err
	}
	rows, err := s.q.WorkspaceListByOrganization(ctx, s.pool, db.WorkspaceListByOrganizationParams{
		OrganizationID: c.OrganizationID, AfterID: p.afterID, PageLimit: resource.Fetch(p.limit),
	})
	if err != nil {
		return Page[Workspace]{}, dbx.Translate(err, "workspace")
	}
	return resource.PageOf(rows, p.limit, workspaceOf, func(r db.Workspace) string { return r.ID }), nil
}

// GetWorkspace reads a workspace of the caller's organization; any other id is
// not found.
func (s *Service) GetWorkspace(ctx context.Context, c *auth.Caller, workspaceID string) (Workspace, error) {
	if err := auth.Require(c, auth.PermOrganizationAdmin); err != nil {
		return Workspace{}, err
	}
	row, err := s.q.WorkspaceGetInOrganization(ctx, s.pool, db.WorkspaceGetInOrganizationParams{OrganizationID: c.OrganizationID, ID: workspaceID})
	if err != nil {
		return Workspace{}, dbx.Translate(err, "workspace")
	}
	return workspaceOf(row), nil
}

// UpdateWorkspaceInput is a PATCH of a workspace: nil fields stay as they are.
type UpdateWorkspaceInput struct {
	ID      string
	Name    *string
	IfMatch *string
}

// Validate checks the fields given.
func (in UpdateWorkspaceInput) Validate() error {
	if in.Name != nil {
		return validateName("name", *in.Name)
	}
	return nil
}

// UpdateWorkspace changes a workspace of the caller's organization. The If-Match
// check and the write happen on the locked row, so of two writers holding the
// same ETag exactly one wins. A change to nothing keeps the version and records
// no audit event.
func (s *Service) UpdateWorkspace(ctx context.Context, c *auth.Caller, in UpdateWorkspaceInput) (Workspace, error) {
	if err := auth.Require(c, auth.PermOrganizationAdmin); err != nil {
		return Workspace{}, err
	}
	if err := in.Validate(); err != nil {
		return Workspace{}, err
	}
	var changed bool
	ws, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Workspace, error) {
		row, err := s.q.WorkspaceGetForUpdate(ctx, tx, db.WorkspaceGetForUpdateParams{OrganizationID: c.OrganizationID, ID: in.ID})
		if err != nil {
			return Workspace{}, dbx.Translate(err, "workspace")
		}
		if err := resource.CheckIfMatch(in.IfMatch, row.ID, row.Version); err != nil {
			return Workspace{}, err
		}
		var fields []string
		if in.Name != nil && *in.Name != row.Name {
			fields = append(fields, "name")
		}
		if len(fields) == 0 {
			return workspaceOf(row), nil
		}
		name := row.Name
		if in.Name != nil {
			name = *in.Name
		}
		row, err = s.q.WorkspaceUpdate(ctx, tx, db.WorkspaceUpdateParams{ID: row.ID, Name: name, UpdatedByID: c.PrincipalID})
		if err != nil {
			return Workspace{}, err
		}
		changed = true
		return workspaceOf(row), audit.Record(ctx, tx, audit.Event{
			OrganizationID: c.OrganizationID, WorkspaceID: row.ID, ActorID: c.PrincipalID,
			Action: "workspace.updated", SubjectType: "workspace", SubjectID: row.ID, Version: &row.Version, ChangedFields: fields,
		})
	})
	if err == nil && changed {
		s.forget() // cached callers carry the workspace's name (GET /me)
	}
	return ws, err
}
