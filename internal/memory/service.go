package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/resource"
)

// Service manages the memories of the caller's workspace. Each method is one
// transaction.
type Service struct {
	pool *pgxpool.Pool
	q    *db.Queries
	reg  *catalog.Registry
	ring *keyring.Ring
}

// NewService returns a service over pool; reg is the installed provider types
// (a record memory's provider must have an installed memory type), and runs
// open their record memories' providers' credentials with ring.
func NewService(pool *pgxpool.Pool, reg *catalog.Registry, ring *keyring.Ring) *Service {
	return &Service{pool: pool, q: db.New(), reg: reg, ring: ring}
}

// Create creates a memory in the caller's workspace. A record memory's
// provider must be an enabled memory provider of the workspace; it is locked
// FOR SHARE while the memory is written, so a concurrent disable is either
// seen (409 disabled) or waits.
func (s *Service) Create(ctx context.Context, c *auth.Caller, in CreateInput) (Memory, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Memory{}, err
	}
	if err := resource.ValidateName("name", in.Name); err != nil {
		return Memory{}, err
	}
	if err := resource.ValidateDescription("description", in.Description); err != nil {
		return Memory{}, err
	}
	switch in.Kind {
	case KindRecord:
		if in.ProviderID == nil {
			return Memory{}, apperr.InvalidField(fieldProvider, "is required for a record memory")
		}
	case KindBuiltin:
		if in.ProviderID != nil {
			return Memory{}, apperr.InvalidField(fieldProvider, "must be left out: a builtin memory is stored by svc")
		}
	default:
		return Memory{}, apperr.InvalidField("kind", "must be record or builtin")
	}
	memID := id.New(id.Memory)
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Memory, error) {
		p := db.MemoryInsertParams{
			ID: memID, WorkspaceID: c.WorkspaceID, Kind: string(in.Kind), Name: in.Name,
			Description: in.Description, CreatedByID: c.PrincipalID,
		}
		fields := []string{"description", "kind", "name"}
		if in.Kind == KindRecord {
			if _, err := provider.ForUse(ctx, tx, s.reg, c.WorkspaceID, *in.ProviderID, catalog.KindMemory, fieldProvider); err != nil {
				return Memory{}, err
			}
			ns := namespaceFor(memID)
			p.ProviderID, p.Namespace = in.ProviderID, &ns
			fields = append(fields, fieldProvider, "namespace")
			slices.Sort(fields)
		}
		row, err := s.q.MemoryInsert(ctx, tx, p)
		if err != nil {
			return Memory{}, err
		}
		if err := s.record(ctx, tx, c, "memory.created", row, fields); err != nil {
			return Memory{}, err
		}
		return memoryOf(row), nil
	})
}

// List lists the memories of the caller's workspace, newest first.
func (s *Service) List(ctx context.Context, c *auth.Caller, limit *int, cursor *string) (Page, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Page{}, err
	}
	after, err := resource.AfterID(cursor)
	if err != nil {
		return Page{}, err
	}
	n := resource.Limit(limit)
	rows, err := s.q.MemoryList(ctx, s.pool, db.MemoryListParams{WorkspaceID: c.WorkspaceID, AfterID: after, PageLimit: resource.Fetch(n)})
	if err != nil {
		return Page{}, dbx.Translate(err, "memory")
	}
	return resource.PageOf(rows, n, memoryOf, func(r db.Memory) string { return r.ID }), nil
}

// Get reads a memory of the caller's workspace; an id of another workspace is
// not found.
func (s *Service) Get(ctx context.Context, c *auth.Caller, memoryID string) (Memory, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Memory{}, err
	}
	row, err := s.q.MemoryGet(ctx, s.pool, db.MemoryGetParams{WorkspaceID: c.WorkspaceID, ID: memoryID})
	if err != nil {
		return Memory{}, dbx.Translate(err, "memory")
	}
	return memoryOf(row), nil
}

// Update renames or re-describes a memory. The If-Match check and the write
// happen on the row locked in one transaction; a change to nothing keeps the
// version and records no audit event.
func (s *Service) Update(ctx context.Context, c *auth.Caller, in UpdateInput) (Memory, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Memory{}, err
	}
	if in.Name != nil {
		if err := resource.ValidateName("name", *in.Name); err != nil {
			return Memory{}, err
		}
	}
	if in.Description != nil {
		if err := resource.ValidateDescription("description", *in.Description); err != nil {
			return Memory{}, err
		}
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Memory, error) {
		row, err := s.q.MemoryGetForUpdate(ctx, tx, db.MemoryGetForUpdateParams{WorkspaceID: c.WorkspaceID, ID: in.ID})
		if err != nil {
			return Memory{}, dbx.Translate(err, "memory")
		}
		if err := resource.CheckIfMatch(in.IfMatch, row.ID, row.Version); err != nil {
			return Memory{}, err
		}
		p := db.MemoryUpdateParams{ID: row.ID, Name: row.Name, Description: row.Description, UpdatedByID: c.PrincipalID}
		var fields []string
		if in.Description != nil && *in.Description != row.Description {
			p.Description, fields = *in.Description, append(fields, "description")
		}
		if in.Name != nil && *in.Name != row.Name {
			p.Name, fields = *in.Name, append(fields, "name")
		}
		if len(fields) == 0 {
			return memoryOf(row), nil
		}
		row, err = s.q.MemoryUpdate(ctx, tx, p)
		if err != nil {
			return Memory{}, err
		}
		if err := s.record(ctx, tx, c, "memory.updated", row, fields); err != nil {
			return Memory{}, err
		}
		return memoryOf(row), nil
	})
}

// Delete deletes a memory and, in the same transaction, what holds its
// records: a builtin memory's records are deleted; a record memory's
// namespace gets a memory_namespace_purge delivery, which the outbox carries
// out at least once. The row is locked FOR UPDATE, so of two deletes holding
// the same ETag one wins and the other finds nothing (404). A memory that a
// revision of an agent that is not archived names is not deleted: 409
// conflict, naming the agent.
func (s *Service) Delete(ctx context.Context, c *auth.Caller, memoryID string, ifMatch *string) error {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return err
	}
	return dbx.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		row, err := s.q.MemoryGetForUpdate(ctx, tx, db.MemoryGetForUpdateParams{WorkspaceID: c.WorkspaceID, ID: memoryID})
		if err != nil {
			return dbx.Translate(err, "memory")
		}
		if err := resource.CheckIfMatch(ifMatch, row.ID, row.Version); err != nil {
			return err
		}
		// Nothing a run depends on is deleted underneath it.
		used, err := s.q.MemoryUsedBy(ctx, tx, db.MemoryUsedByParams{WorkspaceID: row.WorkspaceID, MemoryID: row.ID})
		switch {
		case err == nil:
			return apperr.New(apperr.KindConflict, fmt.Sprintf(
				"agent %s (revision %d) uses the memory, and a thread may still run that revision; archive the agent first", used.AgentID, used.Number))
		case !dbx.IsNotFound(err):
			return err
		}
		switch Kind(row.Kind) {
		case KindBuiltin:
			if _, err := s.q.MemoryRecordDeleteByMemory(ctx, tx, row.ID); err != nil {
				return err
			}
		case KindRecord:
			if row.ProviderID == nil || row.Namespace == nil {
				return apperr.New(apperr.KindInternal, "a record memory without a provider or namespace")
			}
			_, err := outbox.Enqueue(ctx, tx, outbox.Delivery{
				Kind: outbox.KindMemoryNamespacePurge, WorkspaceID: row.WorkspaceID,
				Payload: PurgePayload{ProviderID: *row.ProviderID, Namespace: *row.Namespace, MemoryID: row.ID},
			})
			if err != nil {
				return err
			}
		}
		if err := s.q.MemoryDelete(ctx, tx, row.ID); err != nil {
			return err
		}
		return s.record(ctx, tx, c, "memory.deleted", row, []string{})
	})
}

// record writes the audit event of a change to row.
func (s *Service) record(ctx context.Context, tx pgx.Tx, c *auth.Caller, action string, row db.Memory, fields []string) error {
	return audit.Record(ctx, tx, audit.Event{
		OrganizationID: c.OrganizationID, WorkspaceID: row.WorkspaceID, ActorID: c.PrincipalID,
		Action: action, SubjectType: "memory", SubjectID: row.ID, Version: &row.Version, ChangedFields: fields,
	})
}
