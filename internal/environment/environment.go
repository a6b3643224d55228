// Package environment manages environments: the instances of an environment
// template (package environment/template) on its provider, which the Runtime
// makes when a run first uses one and the maintain_environments sweep stops
// and deletes, through the drivers of package sandbox. Through the API they can be
// listed, read and deleted.
//
// Deleting is asynchronous and recorded honestly: DELETE moves the
// environment to `deleting` (version + 1, an audit event) and answers 204; the
// sweep destroys the vendor's instance and then sets `deleted`. The row stays
// as history, readable with its status, because runs refer to it.
package environment

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/resource"
)

// Status is where an environment is in its life.
type Status string

// The statuses. Starting, running and stopped are set by runs and the sweep;
// Deleting by DELETE; Deleted by the sweep once the vendor's instance is gone;
// Failed when the vendor could not make it.
const (
	StatusStarting Status = "starting"
	StatusRunning  Status = "running"
	StatusStopped  Status = "stopped"
	StatusDeleting Status = "deleting"
	StatusDeleted  Status = "deleted"
	StatusFailed   Status = "failed"
)

// Environment is the view of an environment. The vendor's handle is not in
// it: it is the workers' reference to the instance and may carry a vendor's
// access token.
type Environment struct {
	ID          string
	WorkspaceID string
	TemplateID  string
	ProviderID  string
	Status      Status
	LastUsedAt  *time.Time
	Version     int32
	CreatedByID string
	UpdatedByID string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// ETag is the environment's entity tag.
func (e Environment) ETag() string { return resource.ETag(e.ID, e.Version) }

// Page is one page of a list, newest first; NextCursor is nil on the last page.
type Page = resource.Page[Environment]

// ListInput selects a page of environments.
type ListInput struct {
	Limit  *int
	Cursor *string
	// TemplateID, when set, lists only that template's environments; a
	// template of another workspace (or none) lists nothing.
	TemplateID *string
}

// Service manages the environments of the caller's workspace. Each method is
// one transaction.
type Service struct {
	pool *pgxpool.Pool
	q    *db.Queries
}

// NewService returns a service over pool.
func NewService(pool *pgxpool.Pool) *Service {
	return &Service{pool: pool, q: db.New()}
}

// List lists the environments of the caller's workspace, newest first, in
// every status.
func (s *Service) List(ctx context.Context, c *auth.Caller, in ListInput) (Page, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Page{}, err
	}
	after, err := resource.AfterID(in.Cursor)
	if err != nil {
		return Page{}, err
	}
	n := resource.Limit(in.Limit)
	var rows []db.Environment
	if in.TemplateID != nil {
		rows, err = s.q.EnvironmentListByTemplate(ctx, s.pool, db.EnvironmentListByTemplateParams{
			WorkspaceID: c.WorkspaceID, TemplateID: *in.TemplateID, AfterID: after, PageLimit: resource.Fetch(n),
		})
	} else {
		rows, err = s.q.EnvironmentList(ctx, s.pool, db.EnvironmentListParams{WorkspaceID: c.WorkspaceID, AfterID: after, PageLimit: resource.Fetch(n)})
	}
	if err != nil {
		return Page{}, dbx.Translate(err, "environment")
	}
	return resource.PageOf(rows, n, environmentOf, func(r db.Environment) string { return r.ID }), nil
}

// Get reads an environment of the caller's workspace; an id of another
// workspace is not found.
func (s *Service) Get(ctx context.Context, c *auth.Caller, envID string) (Environment, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Environment{}, err
	}
	row, err := s.q.EnvironmentGet(ctx, s.pool, db.EnvironmentGetParams{WorkspaceID: c.WorkspaceID, ID: envID})
	if err != nil {
		return Environment{}, dbx.Translate(err, "environment")
	}
	return environmentOf(row), nil
}

// Delete asks for an environment's deletion: it moves to `deleting`, and the
// maintain_environments sweep destroys it. The If-Match check and the change
// happen on the row locked FOR NO KEY UPDATE. An environment already deleting
// or deleted is left as it is (the request is answered as done, with no new
// version or audit event): deletion is what was asked, and it is under way.
func (s *Service) Delete(ctx context.Context, c *auth.Caller, envID string, ifMatch *string) error {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return err
	}
	return dbx.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		row, err := s.q.EnvironmentGetForUpdate(ctx, tx, db.EnvironmentGetForUpdateParams{WorkspaceID: c.WorkspaceID, ID: envID})
		if err != nil {
			return dbx.Translate(err, "environment")
		}
		if err := resource.CheckIfMatch(ifMatch, row.ID, row.Version); err != nil {
			return err
		}
		if slices.Contains([]Status{StatusDeleting, StatusDeleted}, Status(row.Status)) {
			return nil
		}
		row, err = s.q.EnvironmentSetStatus(ctx, tx, db.EnvironmentSetStatusParams{ID: row.ID, Status: string(StatusDeleting), UpdatedByID: c.PrincipalID})
		if err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.Event{
			OrganizationID: c.OrganizationID, WorkspaceID: row.WorkspaceID, ActorID: c.PrincipalID,
			Action: "environment.deleted", SubjectType: "environment", SubjectID: row.ID, Version: &row.Version,
			ChangedFields: []string{"status"},
		})
	})
}

// environmentOf maps a row to the view.
func environmentOf(r db.Environment) Environment {
	var last *time.Time
	if r.LastUsedAt != nil {
		t := r.LastUsedAt.UTC()
		last = &t
	}
	return Environment{
		ID: r.ID, WorkspaceID: r.WorkspaceID, TemplateID: r.TemplateID, ProviderID: r.ProviderID,
		Status: Status(r.Status), LastUsedAt: last, Version: r.Version, CreatedByID: r.CreatedByID,
		UpdatedByID: r.UpdatedByID, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
}
