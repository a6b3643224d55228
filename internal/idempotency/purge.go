package idempotency

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/dbx"
)

// PurgeBatch is the most records one statement deletes, so that each batch is
// a short transaction and an interrupted pass loses nothing.
const PurgeBatch = 1000

// Purge deletes expired records (completed ones past their 24 hours, in_progress
// ones past their lease), by the database's clock, in batches of PurgeBatch
// until a batch comes back short or ctx ends. It is the purge_idempotency_keys
// sweep. It returns how many it deleted, also when it fails part way.
func Purge(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	return purge(ctx, pool, PurgeBatch)
}

// purge is Purge with a batch size of the caller's choosing, for tests.
func purge(ctx context.Context, pool *pgxpool.Pool, batch int32) (int64, error) {
	q := db.New()
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := q.IdempotencyKeyPurgeExpired(ctx, pool, batch)
		if err != nil {
			return total, fmt.Errorf("purge idempotency keys: %w", dbx.Translate(err, ""))
		}
		total += n
		if n < int64(batch) {
			return total, nil
		}
	}
}
