package asset

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/dbx"
)

// StaleUploadAge is how long an upload may run before purge_asset_uploads
// treats it as abandoned by a process that died. An upload still running
// then fails when it finishes (its row is gone) and deletes its object.
const StaleUploadAge = 6 * time.Hour

// purgeBatch bounds the uploads one purging transaction holds locked while
// their objects are deleted.
const purgeBatch = 100

// PurgeStaleUploads deletes what uploads older than olderThan left behind:
// their objects first, then their rows, in transactions of at most
// purgeBatch rows that keep the rows locked meanwhile (so an upload
// finishing at that moment waits, then finds its row gone and fails). An
// object that cannot be deleted fails the batch; its rows stay for the next
// pass. It returns the number of uploads purged.
func (s *Service) PurgeStaleUploads(ctx context.Context, olderThan time.Duration) (int, error) {
	total := 0
	for {
		n, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (int, error) {
			rows, err := s.q.AssetUploadClaimStale(ctx, tx, db.AssetUploadClaimStaleParams{OlderThanSeconds: olderThan.Seconds(), Batch: purgeBatch})
			if err != nil {
				return 0, err
			}
			for _, r := range rows {
				if err := s.store.Delete(ctx, r.ObjectKey); err != nil {
					return 0, fmt.Errorf("purge upload %s: %w", r.ID, err)
				}
				if _, err := s.q.AssetUploadDelete(ctx, tx, r.ID); err != nil {
					return 0, err
				}
			}
			return len(rows), nil
		})
		total += n
		if err != nil || n < purgeBatch {
			return total, err
		}
	}
}
