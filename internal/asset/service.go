package asset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/objectstore"
	"github.com/svcdev/svc/internal/resource"
)

// cleanupTimeout bounds deleting what a failed upload left, which outlives a
// client that went away.
const cleanupTimeout = 30 * time.Second

// Service manages the assets of the caller's workspace.
type Service struct {
	pool  *pgxpool.Pool
	q     *db.Queries
	store objectstore.Store
	limit int64
	log   *slog.Logger
}

// NewService returns a service keeping content in store; limit is the largest
// asset in bytes (limits.asset_bytes).
func NewService(pool *pgxpool.Pool, store objectstore.Store, limit int64, log *slog.Logger) *Service {
	return &Service{pool: pool, q: db.New(), store: store, limit: limit, log: log}
}

// CreateInput is an upload.
type CreateInput struct {
	Name string
	// ContentType is the request's Content-Type; empty is DefaultContentType.
	ContentType string
	// Size is the announced length (Content-Length), or -1 when unknown.
	Size int64
	// Body is the content, read once, to its end.
	Body io.Reader
}

// Create streams an upload to the object store and records the asset once
// the whole content is stored (see the package documentation). More than the
// limit is 413 payload_too_large, announced or not; a body that ends early or
// fails is 400; a store that fails is 503. Nothing remains after any error.
func (s *Service) Create(ctx context.Context, c *auth.Caller, in CreateInput) (Asset, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Asset{}, err
	}
	if err := validateName(in.Name); err != nil {
		return Asset{}, err
	}
	contentType, err := normalizeContentType(in.ContentType)
	if err != nil {
		return Asset{}, err
	}
	if in.Size > s.limit {
		return Asset{}, s.tooLarge()
	}
	assetID := id.New(id.Asset)
	key, err := objectstore.Key(c.WorkspaceID, "assets", assetID)
	if err != nil {
		return Asset{}, fmt.Errorf("asset key: %w", err)
	}
	if err := s.q.AssetUploadBegin(ctx, s.pool, db.AssetUploadBeginParams{
		ID: assetID, WorkspaceID: c.WorkspaceID, ObjectKey: key, CreatedByID: c.PrincipalID,
	}); err != nil {
		return Asset{}, dbx.Translate(err, "asset upload")
	}

	body := &bodyReader{r: in.Body}
	hash := sha256.New()
	stored, err := s.store.Put(ctx, key, io.TeeReader(body, hash), in.Size, objectstore.PutOptions{Limit: s.limit, ContentType: contentType})
	if err != nil {
		s.abandon(ctx, assetID, key)
		return Asset{}, s.putError(ctx, body, err)
	}
	a, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Asset, error) {
		if _, err := s.q.AssetUploadFinish(ctx, tx, db.AssetUploadFinishParams{ID: assetID, WorkspaceID: c.WorkspaceID}); err != nil {
			if dbx.IsNotFound(err) {
				return Asset{}, apperr.Unavailable("the upload took too long and was discarded; upload again", err)
			}
			return Asset{}, err
		}
		row, err := s.q.AssetInsert(ctx, tx, db.AssetInsertParams{
			ID: assetID, WorkspaceID: c.WorkspaceID, Name: in.Name, ContentType: contentType, Size: stored.Size,
			Sha256: hex.EncodeToString(hash.Sum(nil)), ObjectKey: key, CreatedByID: c.PrincipalID,
		})
		if err != nil {
			return Asset{}, err
		}
		if err := s.record(ctx, tx, c, "asset.created", row, []string{"content_type", "name", "sha256", "size"}); err != nil {
			return Asset{}, err
		}
		return assetOf(row), nil
	})
	if err != nil {
		s.abandon(ctx, assetID, key)
		return Asset{}, err
	}
	return a, nil
}

// abandon removes what a failed upload stored: the object first, then the
// upload row. If the object cannot be deleted the row stays, so the
// purge_asset_uploads sweep tries again later; an object is never left
// without a row that accounts for it.
func (s *Service) abandon(ctx context.Context, assetID, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := s.store.Delete(ctx, key); err != nil {
		s.log.Warn("failed upload not cleaned up; the purge_asset_uploads sweep will retry", "asset_id", assetID, "error", err.Error())
		return
	}
	if _, err := s.q.AssetUploadDelete(ctx, s.pool, assetID); err != nil {
		s.log.Warn("failed upload's record not deleted; the purge_asset_uploads sweep will retry", "asset_id", assetID, "error", err.Error())
	}
}

// putError classifies a failed Put: the client's doing (too large, cut off,
// a wrong Content-Length) or the store's.
func (s *Service) putError(ctx context.Context, body *bodyReader, err error) error {
	switch {
	case errors.Is(err, objectstore.ErrTooLarge):
		return s.tooLarge()
	case errors.Is(err, objectstore.ErrSizeMismatch):
		return apperr.Wrap(apperr.KindInvalidArgument, "the body's length differs from its Content-Length", err)
	case body.err != nil || ctx.Err() != nil:
		if ae, ok := apperr.As(body.err); ok {
			// The request body's own limits refused it (a body slower
			// than server.body_min_bytes_per_second: 408).
			return apperr.Wrap(ae.Kind, ae.Msg+"; nothing was stored", err)
		}
		return apperr.Wrap(apperr.KindInvalidArgument, "the upload was cut off before its end; nothing was stored", err)
	}
	return apperr.Unavailable("the object store is unavailable; retry later", err)
}

func (s *Service) tooLarge() error {
	return apperr.New(apperr.KindPayloadTooLarge, "the asset exceeds "+strconv.FormatInt(s.limit, 10)+" bytes (limits.asset_bytes); nothing was stored")
}

// List lists the assets of the caller's workspace, newest first, retired
// ones included.
func (s *Service) List(ctx context.Context, c *auth.Caller, limit *int, cursor *string) (Page, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Page{}, err
	}
	after, err := resource.AfterID(cursor)
	if err != nil {
		return Page{}, err
	}
	n := resource.Limit(limit)
	rows, err := s.q.AssetList(ctx, s.pool, db.AssetListParams{WorkspaceID: c.WorkspaceID, AfterID: after, PageLimit: resource.Fetch(n)})
	if err != nil {
		return Page{}, dbx.Translate(err, "asset")
	}
	return resource.PageOf(rows, n, assetOf, func(r db.Asset) string { return r.ID }), nil
}

// Get reads an asset of the caller's workspace; an id of another workspace
// is not found, exactly like a missing one.
func (s *Service) Get(ctx context.Context, c *auth.Caller, assetID string) (Asset, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Asset{}, err
	}
	row, err := s.q.AssetGet(ctx, s.pool, db.AssetGetParams{WorkspaceID: c.WorkspaceID, ID: assetID})
	if err != nil {
		return Asset{}, dbx.Translate(err, "asset")
	}
	return assetOf(row), nil
}

// Open reads the content of a, which Get returned, from offset for length
// bytes (-1: to the end). Retired assets stay readable. The caller closes
// the reader; it streams from the store.
func (s *Service) Open(ctx context.Context, a Asset, offset, length int64) (io.ReadCloser, error) {
	if a.objectKey == "" {
		return nil, errors.New("asset: Open needs an asset from Get")
	}
	r, err := s.store.Get(ctx, a.objectKey, offset, length)
	switch {
	case err == nil:
		return r, nil
	case errors.Is(err, objectstore.ErrNotFound):
		// The row promises the content: its loss is a fault, not a 404.
		return nil, fmt.Errorf("asset %s: content missing from the object store: %w", a.ID, err)
	case errors.Is(err, objectstore.ErrInvalidRange), errors.Is(err, objectstore.ErrInvalidKey):
		return nil, fmt.Errorf("asset %s: %w", a.ID, err)
	}
	return nil, apperr.Unavailable("the object store is unavailable; retry later", err)
}

// Retire retires an asset of the caller's workspace (DELETE). The If-Match
// check and the write happen on the row locked FOR NO KEY UPDATE. Retiring a
// retired asset changes nothing and records nothing.
func (s *Service) Retire(ctx context.Context, c *auth.Caller, assetID string, ifMatch *string) error {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return err
	}
	return dbx.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		row, err := s.q.AssetGetForUpdate(ctx, tx, db.AssetGetForUpdateParams{WorkspaceID: c.WorkspaceID, ID: assetID})
		if err != nil {
			return dbx.Translate(err, "asset")
		}
		if err := resource.CheckIfMatch(ifMatch, row.ID, row.Version); err != nil {
			return err
		}
		if row.RetiredAt != nil {
			return nil
		}
		row, err = s.q.AssetRetire(ctx, tx, db.AssetRetireParams{ID: row.ID, UpdatedByID: c.PrincipalID})
		if err != nil {
			return err
		}
		return s.record(ctx, tx, c, "asset.retired", row, []string{"retired_at"})
	})
}

// RequireUsable checks that a request may newly refer to the asset assetID,
// for the packages whose resources refer to assets: it must be an asset of
// the caller's workspace (else 404 not_found naming field, exactly as if it
// did not exist) that is not retired (else 409 conflict naming field). Call
// it inside the transaction that writes the reference: the row is locked FOR
// SHARE there, so a concurrent retire either is seen here or waits for that
// transaction. With a nil tx it only checks, outside any transaction.
func (s *Service) RequireUsable(ctx context.Context, tx pgx.Tx, c *auth.Caller, field, assetID string) (Asset, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Asset{}, err
	}
	return s.Usable(ctx, tx, c.WorkspaceID, field, assetID)
}

// Usable is RequireUsable for a caller already allowed to refer to the
// workspace's assets: the reference checks of a resource being written (a
// skill revision's package), which name the workspace rather than a caller.
func (s *Service) Usable(ctx context.Context, tx pgx.Tx, workspaceID, field, assetID string) (Asset, error) {
	var q db.DBTX = s.pool
	if tx != nil {
		q = tx
	}
	row, err := s.q.AssetGetForShare(ctx, q, db.AssetGetForShareParams{WorkspaceID: workspaceID, ID: assetID})
	if dbx.IsNotFound(err) {
		return Asset{}, apperr.NotFoundField("asset not found", field, "no asset with this id in the workspace")
	}
	if err != nil {
		return Asset{}, dbx.Translate(err, "asset")
	}
	if row.RetiredAt != nil {
		return Asset{}, &apperr.Error{Kind: apperr.KindConflict, Msg: "the asset is retired",
			Details: []apperr.Detail{{Field: field, Reason: "the asset is retired and cannot be newly referred to"}}}
	}
	return assetOf(row), nil
}

// record writes the audit event of a change to row.
func (s *Service) record(ctx context.Context, tx pgx.Tx, c *auth.Caller, action string, row db.Asset, fields []string) error {
	return audit.Record(ctx, tx, audit.Event{
		OrganizationID: c.OrganizationID, WorkspaceID: row.WorkspaceID, ActorID: c.PrincipalID,
		Action: action, SubjectType: "asset", SubjectID: row.ID, Version: &row.Version, ChangedFields: fields,
	})
}

// bodyReader remembers the error the request body failed with, to tell a
// client's cut-off upload from a failing store.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}
