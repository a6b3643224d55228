package revision

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/labels"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/resource"
)

// Content is what a kind contributes to its revisions: its configuration C.
type Content[C any] interface {
	// Normalize decodes and validates a configuration without the database
	// and returns it normalized: every member present, defaults applied, sets
	// in a fixed order. Errors name fields under "config".
	Normalize(raw json.RawMessage) (C, error)
	// CheckReferences checks, in tx, everything cfg names: it must exist in
	// the caller's workspace (else 404 naming the field) and be usable (else
	// 409 disabled or conflict). headID is the head being published to, ""
	// when it is being created.
	CheckReferences(ctx context.Context, tx pgx.Tx, c *auth.Caller, headID string, cfg C) error
	// Precheck does, before the transaction, the slow checks of what cfg
	// names whose outcome cannot change meanwhile (reading a skill package's
	// immutable content), so that no lock is held while they run.
	// CheckReferences still locks and checks the same references in tx.
	Precheck(ctx context.Context, c *auth.Caller, cfg C) error
}

// Service manages the heads and revisions of one kind in the caller's
// workspace. Each method is one transaction.
type Service[C any] struct {
	pool    *pgxpool.Pool
	q       *db.Queries
	kind    Kind
	content Content[C]
}

// NewService returns the service of kind over pool.
func NewService[C any](pool *pgxpool.Pool, kind Kind, content Content[C]) *Service[C] {
	return &Service[C]{pool: pool, q: db.New(), kind: kind, content: content}
}

// Kind is the kind this service manages.
func (s *Service[C]) Kind() Kind { return s.kind }

// Create creates a head with revision 1, its default, and emits the
// revision's <kind>.revision_published webhook event.
func (s *Service[C]) Create(ctx context.Context, c *auth.Caller, in CreateInput) (Head, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Head{}, err
	}
	if err := resource.ValidateName("name", in.Name); err != nil {
		return Head{}, err
	}
	desc := ""
	if in.Description != nil {
		desc = *in.Description
	}
	if err := resource.ValidateDescription("description", desc); err != nil {
		return Head{}, err
	}
	lbl, err := encodeLabels(in.Labels)
	if err != nil {
		return Head{}, err
	}
	cfg, canonical, err := s.normalize(in.Config)
	if err != nil {
		return Head{}, err
	}
	if err := s.content.Precheck(ctx, c, cfg); err != nil {
		return Head{}, err
	}
	headID, revID := id.New(s.kind.Prefix()), id.New(RevisionPrefix)
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Head, error) {
		if err := s.content.CheckReferences(ctx, tx, c, "", cfg); err != nil {
			return Head{}, err
		}
		row, err := s.q.HeadInsert(ctx, tx, db.HeadInsertParams{
			ID: headID, WorkspaceID: c.WorkspaceID, Kind: string(s.kind), Name: in.Name, Description: desc,
			Labels: lbl, DefaultRevisionID: revID, CreatedByID: c.PrincipalID,
		})
		if err != nil {
			return Head{}, err
		}
		rev, err := s.q.RevisionInsert(ctx, tx, db.RevisionInsertParams{
			ID: revID, HeadID: headID, Number: 1, Config: canonical, ContentHash: ContentHash(canonical), CreatedByID: c.PrincipalID,
		})
		if err != nil {
			return Head{}, err
		}
		if err := s.record(ctx, tx, c, "created", row, []string{"config", "description", "labels", "name"}); err != nil {
			return Head{}, err
		}
		// Revision 1 is published too: subscribers learn of new heads.
		if err := s.emitPublished(ctx, tx, row, rev); err != nil {
			return Head{}, err
		}
		return headOf(row)
	})
}

// Get reads a head of the caller's workspace.
func (s *Service[C]) Get(ctx context.Context, c *auth.Caller, headID string) (Head, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Head{}, err
	}
	row, err := s.q.HeadGet(ctx, s.pool, db.HeadGetParams{WorkspaceID: c.WorkspaceID, Kind: string(s.kind), ID: headID})
	if err != nil {
		return Head{}, s.translate(err)
	}
	return headOf(row)
}

// List lists the heads of the caller's workspace, newest first, that carry
// every selected label, contain q in their name or description, and are
// archived or not as asked. It plans the query for the actual filters (see
// the HeadList query), which is what keeps a selective label filter on the
// label index and an unfiltered page on the id index.
func (s *Service[C]) List(ctx context.Context, c *auth.Caller, in ListInput) (Page, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Page{}, err
	}
	sels, err := labels.ParseSelectors(in.Labels)
	if err != nil {
		return Page{}, err
	}
	want, possible := labels.Selection(sels)
	if !possible {
		return Page{Items: []Head{}}, nil
	}
	selector, err := json.Marshal(want)
	if err != nil {
		return Page{}, fmt.Errorf("encode label selectors: %w", err)
	}
	pattern, err := resource.SearchPattern(in.Q)
	if err != nil {
		return Page{}, err
	}
	after, err := resource.AfterID(in.Cursor)
	if err != nil {
		return Page{}, err
	}
	n := resource.Limit(in.Limit)
	rows, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) ([]db.Head, error) {
		if err := s.q.HeadListPlanCustom(ctx, tx); err != nil {
			return nil, err
		}
		return s.q.HeadList(ctx, tx, db.HeadListParams{
			WorkspaceID: c.WorkspaceID, Kind: string(s.kind), AfterID: after, Selector: selector,
			Archived: in.Archived, Pattern: nonEmpty(pattern), PageLimit: resource.Fetch(n),
		})
	})
	if err != nil {
		return Page{}, err
	}
	return resource.PageOfErr(rows, n, headOf, func(r db.Head) string { return r.ID })
}

// Update changes a head's name, description, labels or default revision. The
// If-Match check and the write happen on the row locked FOR NO KEY UPDATE, so
// of two writers holding the same ETag exactly one wins. The new default must
// be a revision of this head (another head's is 404, as if absent). A change to
// nothing keeps the version and records no audit event.
func (s *Service[C]) Update(ctx context.Context, c *auth.Caller, in UpdateInput) (Head, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Head{}, err
	}
	if in.Name != nil {
		if err := resource.ValidateName("name", *in.Name); err != nil {
			return Head{}, err
		}
	}
	if in.Description != nil {
		if err := resource.ValidateDescription("description", *in.Description); err != nil {
			return Head{}, err
		}
	}
	if in.Labels != nil {
		if err := labels.Validate(in.Labels); err != nil {
			return Head{}, err
		}
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Head, error) {
		row, err := s.lock(ctx, tx, c, in.ID, in.IfMatch)
		if err != nil {
			return Head{}, err
		}
		cur, err := headOf(row)
		if err != nil {
			return Head{}, err
		}
		p := db.HeadUpdateParams{
			ID: row.ID, Name: row.Name, Description: row.Description, Labels: row.Labels,
			DefaultRevisionID: row.DefaultRevisionID, UpdatedByID: c.PrincipalID,
		}
		var fields []string
		if in.Name != nil && *in.Name != row.Name {
			p.Name, fields = *in.Name, append(fields, "name")
		}
		if in.Description != nil && *in.Description != row.Description {
			p.Description, fields = *in.Description, append(fields, "description")
		}
		if in.Labels != nil && !maps.Equal(in.Labels, cur.Labels) {
			if p.Labels, err = json.Marshal(in.Labels); err != nil {
				return Head{}, fmt.Errorf("encode labels: %w", err)
			}
			fields = append(fields, "labels")
		}
		if in.DefaultRevisionID != nil && *in.DefaultRevisionID != row.DefaultRevisionID {
			if _, err := s.q.RevisionGetOfHead(ctx, tx, db.RevisionGetOfHeadParams{HeadID: row.ID, ID: *in.DefaultRevisionID}); err != nil {
				return Head{}, refNotFound(err, "default_revision_id", "no revision with this id belongs to this "+string(s.kind))
			}
			p.DefaultRevisionID, fields = *in.DefaultRevisionID, append(fields, "default_revision_id")
		}
		if len(fields) == 0 {
			return cur, nil
		}
		row, err = s.q.HeadUpdate(ctx, tx, p)
		if err != nil {
			return Head{}, err
		}
		slices.Sort(fields)
		if err := s.record(ctx, tx, c, "updated", row, fields); err != nil {
			return Head{}, err
		}
		return headOf(row)
	})
}

// Archive archives a head: new runs of it, and new references to it, are
// refused. Archiving an archived head changes nothing (archive has no
// condition) and answers the head as it is.
func (s *Service[C]) Archive(ctx context.Context, c *auth.Caller, headID string, ifMatch *string) (Head, error) {
	return s.setArchived(ctx, c, headID, ifMatch, true)
}

// Unarchive makes an archived head active again; a head that is not archived
// is 409 conflict (only an archived head can be unarchived).
func (s *Service[C]) Unarchive(ctx context.Context, c *auth.Caller, headID string, ifMatch *string) (Head, error) {
	return s.setArchived(ctx, c, headID, ifMatch, false)
}

func (s *Service[C]) setArchived(ctx context.Context, c *auth.Caller, headID string, ifMatch *string, archive bool) (Head, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Head{}, err
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Head, error) {
		row, err := s.lock(ctx, tx, c, headID, ifMatch)
		if err != nil {
			return Head{}, err
		}
		archived := row.ArchivedAt != nil
		switch {
		case archive && archived:
			return headOf(row)
		case !archive && !archived:
			return Head{}, apperr.New(apperr.KindConflict, "the "+string(s.kind)+" is not archived")
		}
		action := "unarchived"
		if archive {
			action = "archived"
		}
		row, err = s.q.HeadSetArchived(ctx, tx, db.HeadSetArchivedParams{ID: row.ID, Archive: archive, UpdatedByID: c.PrincipalID})
		if err != nil {
			return Head{}, err
		}
		if err := s.record(ctx, tx, c, action, row, []string{"archived_at"}); err != nil {
			return Head{}, err
		}
		return headOf(row)
	})
}

// lock reads a head of the caller's workspace FOR NO KEY UPDATE and checks
// If-Match against it. The lookup comes first, so another workspace's id is
// the same 404 as an absent one, with or without If-Match.
func (s *Service[C]) lock(ctx context.Context, tx pgx.Tx, c *auth.Caller, headID string, ifMatch *string) (db.Head, error) {
	row, err := s.q.HeadGetForUpdate(ctx, tx, db.HeadGetForUpdateParams{WorkspaceID: c.WorkspaceID, Kind: string(s.kind), ID: headID})
	if err != nil {
		return db.Head{}, s.translate(err)
	}
	if err := resource.CheckIfMatch(ifMatch, row.ID, row.Version); err != nil {
		return db.Head{}, err
	}
	return row, nil
}

// translate maps a head lookup's error: no row is this kind's 404.
func (s *Service[C]) translate(err error) error {
	return dbx.Translate(err, string(s.kind))
}

// normalize validates a configuration and returns it with its canonical bytes.
func (s *Service[C]) normalize(raw json.RawMessage) (C, []byte, error) {
	var zero C
	if len(raw) == 0 || string(raw) == "null" {
		return zero, nil, apperr.InvalidField("config", "is required")
	}
	cfg, err := s.content.Normalize(raw)
	if err != nil {
		return zero, nil, err
	}
	canonical, err := Canonical(cfg)
	if err != nil {
		return zero, nil, fmt.Errorf("encode %s config: %w", s.kind, err)
	}
	return cfg, canonical, nil
}

// record writes the audit event "<kind>.<verb>" of a change to row.
func (s *Service[C]) record(ctx context.Context, tx pgx.Tx, c *auth.Caller, verb string, row db.Head, fields []string) error {
	return audit.Record(ctx, tx, audit.Event{
		OrganizationID: c.OrganizationID, WorkspaceID: row.WorkspaceID, ActorID: c.PrincipalID,
		Action: string(s.kind) + "." + verb, SubjectType: string(s.kind), SubjectID: row.ID, Version: &row.Version, ChangedFields: fields,
	})
}

// encodeLabels validates labels and encodes them for the column.
func encodeLabels(m map[string]string) ([]byte, error) {
	if err := labels.Validate(m); err != nil {
		return nil, err
	}
	if m == nil {
		return []byte("{}"), nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode labels: %w", err)
	}
	return raw, nil
}

// refNotFound turns a lookup that found no row into a 404 naming the field
// that held the reference; other errors are translated.
func refNotFound(err error, field, reason string) error {
	if dbx.IsNotFound(err) {
		return refcheck.NotFound(field, reason)
	}
	return dbx.Translate(err, "")
}
