package revision

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/resource"
	"github.com/svcdev/svc/internal/webhook"
)

// Published is the answer of a publish: the revision, and whether it was
// created (false: the content was identical to the default revision, which is
// returned instead).
type Published[C any] struct {
	Revision Revision[C]
	Created  bool
}

// Publish adds a revision to a head. The head is locked FOR NO KEY UPDATE
// first, so publishes to one head run one at a time and the identity check
// sees the default revision as it is:
//   - content identical to the current default revision (same content hash)
//     creates nothing, whatever MakeDefault says: the default revision is
//     returned and the head's version, ETag and audit trail are unchanged
//     (docs/decisions/0020-agents-and-skills.md). References are not checked again: nothing new uses them;
//   - otherwise references are checked, revision latest+1 is written, and the
//     head's version moves (its latest revision number changed), with its
//     default when MakeDefault is nil or true; the audit event is
//     "<kind>.revision_published", and so is the webhook event, in the same
//     transaction.
//
// An archived head takes no new revisions (409 conflict): unarchive it first.
func (s *Service[C]) Publish(ctx context.Context, c *auth.Caller, in PublishInput) (Published[C], error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Published[C]{}, err
	}
	cfg, canonical, normErr := s.normalize(in.Config)
	makeDefault := in.MakeDefault == nil || *in.MakeDefault
	if normErr == nil {
		// The head is looked up before the body is judged (below too), so an
		// id of another workspace is 404 whatever the body holds.
		if _, err := s.q.HeadGet(ctx, s.pool, db.HeadGetParams{WorkspaceID: c.WorkspaceID, Kind: string(s.kind), ID: in.HeadID}); err != nil {
			return Published[C]{}, s.translate(err)
		}
		if err := s.content.Precheck(ctx, c, cfg); err != nil {
			return Published[C]{}, err
		}
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Published[C], error) {
		// The head is looked up before the body is judged, so an id of another
		// workspace is 404 whatever the body holds.
		head, err := s.q.HeadGetForUpdate(ctx, tx, db.HeadGetForUpdateParams{WorkspaceID: c.WorkspaceID, Kind: string(s.kind), ID: in.HeadID})
		if err != nil {
			return Published[C]{}, s.translate(err)
		}
		if normErr != nil {
			return Published[C]{}, normErr
		}
		if head.ArchivedAt != nil {
			return Published[C]{}, apperr.New(apperr.KindConflict, "the "+string(s.kind)+" is archived; unarchive it before publishing")
		}
		hash := ContentHash(canonical)
		def, err := s.q.RevisionGetOfHead(ctx, tx, db.RevisionGetOfHeadParams{HeadID: head.ID, ID: head.DefaultRevisionID})
		if err != nil {
			return Published[C]{}, err
		}
		if def.ContentHash == hash {
			r, err := revisionOf[C](def)
			return Published[C]{Revision: r, Created: false}, err
		}
		if err := s.content.CheckReferences(ctx, tx, c, head.ID, cfg); err != nil {
			return Published[C]{}, err
		}
		number := head.LatestRevisionNumber + 1
		rev, err := s.q.RevisionInsert(ctx, tx, db.RevisionInsertParams{
			ID: id.New(RevisionPrefix), HeadID: head.ID, Number: number, Config: canonical, ContentHash: hash, CreatedByID: c.PrincipalID,
		})
		if err != nil {
			return Published[C]{}, err
		}
		fields := []string{"latest_revision_number"}
		defaultID := head.DefaultRevisionID
		if makeDefault {
			defaultID, fields = rev.ID, []string{"default_revision_id", "latest_revision_number"}
		}
		head, err = s.q.HeadPublished(ctx, tx, db.HeadPublishedParams{
			ID: head.ID, LatestRevisionNumber: number, DefaultRevisionID: defaultID, UpdatedByID: c.PrincipalID,
		})
		if err != nil {
			return Published[C]{}, err
		}
		if err := s.record(ctx, tx, c, "revision_published", head, fields); err != nil {
			return Published[C]{}, err
		}
		if err := s.emitPublished(ctx, tx, head, rev); err != nil {
			return Published[C]{}, err
		}
		r, err := revisionOf[C](rev)
		return Published[C]{Revision: r, Created: true}, err
	})
}

// ListRevisions lists a head's revisions, highest number first.
func (s *Service[C]) ListRevisions(ctx context.Context, c *auth.Caller, headID string, limit *int, cursor *string) (RevisionPage[C], error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return RevisionPage[C]{}, err
	}
	before, err := beforeNumber(cursor)
	if err != nil {
		return RevisionPage[C]{}, err
	}
	if _, err := s.q.HeadGet(ctx, s.pool, db.HeadGetParams{WorkspaceID: c.WorkspaceID, Kind: string(s.kind), ID: headID}); err != nil {
		return RevisionPage[C]{}, s.translate(err)
	}
	n := resource.Limit(limit)
	rows, err := s.q.RevisionList(ctx, s.pool, db.RevisionListParams{HeadID: headID, BeforeNumber: before, PageLimit: resource.Fetch(n)})
	if err != nil {
		return RevisionPage[C]{}, dbx.Translate(err, "revision")
	}
	rows, more := resource.Trim(rows, n)
	out := RevisionPage[C]{Items: make([]Revision[C], 0, len(rows))}
	for _, r := range rows {
		rev, err := revisionOf[C](r)
		if err != nil {
			return RevisionPage[C]{}, err
		}
		out.Items = append(out.Items, rev)
	}
	if more {
		next := revisionCursor(rows[len(rows)-1].Number)
		out.NextCursor = &next
	}
	return out, nil
}

// GetRevision reads one revision of a head of the caller's workspace; a
// revision of another head is not found.
func (s *Service[C]) GetRevision(ctx context.Context, c *auth.Caller, headID, revisionID string) (Revision[C], error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Revision[C]{}, err
	}
	row, err := s.q.RevisionGet(ctx, s.pool, db.RevisionGetParams{WorkspaceID: c.WorkspaceID, Kind: string(s.kind), HeadID: headID, ID: revisionID})
	if err != nil {
		return Revision[C]{}, dbx.Translate(err, "revision")
	}
	return revisionOf[C](row)
}

// Runnable returns the revision a new run of head headID would use, in q (a
// transaction of the caller, typically the one that writes the run): the
// pinned revisionID when given (it must belong to the head), else the default
// revision. The head is locked FOR SHARE, so a concurrent archive is either
// seen or waits until the caller's transaction ends. An archived head is 409
// conflict; an absent one, or one of another workspace, 404 naming the field
// <kind>_id (agent_id), and an absent pinned revision 404 naming revision_id.
func (s *Service[C]) Runnable(ctx context.Context, q db.DBTX, workspaceID, headID string, revisionID *string) (Revision[C], error) {
	head, err := s.q.HeadGetForShare(ctx, q, db.HeadGetForShareParams{WorkspaceID: workspaceID, Kind: string(s.kind), ID: headID})
	if dbx.IsNotFound(err) {
		return Revision[C]{}, apperr.NotFoundField(string(s.kind)+" not found", string(s.kind)+"_id", "no "+string(s.kind)+" with this id in the workspace")
	}
	if err != nil {
		return Revision[C]{}, s.translate(err)
	}
	if head.ArchivedAt != nil {
		return Revision[C]{}, apperr.New(apperr.KindConflict, "the "+string(s.kind)+" is archived; archived "+string(s.kind)+"s start no new runs")
	}
	want := head.DefaultRevisionID
	if revisionID != nil {
		want = *revisionID
	}
	row, err := s.q.RevisionGetOfHead(ctx, q, db.RevisionGetOfHeadParams{HeadID: head.ID, ID: want})
	if err != nil {
		return Revision[C]{}, refNotFound(err, "revision_id", "no revision with this id belongs to this "+string(s.kind))
	}
	return revisionOf[C](row)
}

// emitPublished emits the webhook event of a new revision rev of head (head
// as it is after the publish) in tx: agent.revision_published or
// skill.revision_published, with the ids a receiver needs to fetch both.
func (s *Service[C]) emitPublished(ctx context.Context, tx pgx.Tx, head db.Head, rev db.Revision) error {
	event := webhook.AgentRevisionPublished
	if s.kind == KindSkill {
		event = webhook.SkillRevisionPublished
	}
	err := webhook.Emit(ctx, tx, head.WorkspaceID, webhook.Event{Type: event, Time: rev.CreatedAt, Data: map[string]any{
		string(s.kind) + "_id": head.ID,
		"name":                 head.Name,
		"revision_id":          rev.ID,
		"revision_number":      rev.Number,
		"default_revision_id":  head.DefaultRevisionID,
		"published_by_id":      rev.CreatedByID,
	}})
	if err != nil {
		return fmt.Errorf("emit %s: %w", event, err)
	}
	return nil
}
