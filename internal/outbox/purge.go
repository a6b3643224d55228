package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/config"
)

// Purge removes settled deliveries past their kind's retention: purge_batch
// rows per statement (each its own short transaction), repeating while full
// batches come back, for at most purge_budget_seconds. Pending rows are never
// touched. It returns how many rows it removed.
func Purge(ctx context.Context, pool *pgxpool.Pool, cfg config.Outbox) (int64, error) {
	q := db.New()
	deadline := time.Now().Add(time.Duration(cfg.PurgeBudgetSeconds) * time.Second)
	var total int64
	for {
		full := false
		for _, kind := range Kinds {
			p := cfg.Policy(kind)
			for _, st := range []struct {
				status    string
				retention int
			}{
				{StatusDelivered, p.DeliveredRetentionSeconds},
				{StatusCancelled, p.DeliveredRetentionSeconds},
				{StatusDead, p.DeadRetentionSeconds},
			} {
				if time.Now().After(deadline) {
					return total, nil
				}
				n, err := q.OutboxPurge(ctx, pool, db.OutboxPurgeParams{
					Kind: kind, Status: st.status, RetentionSeconds: float64(st.retention), Batch: int32(cfg.PurgeBatch),
				})
				total += n
				if err != nil {
					return total, fmt.Errorf("purge %s %s deliveries: %w", st.status, kind, err)
				}
				full = full || n == int64(cfg.PurgeBatch)
			}
		}
		if !full {
			return total, nil
		}
	}
}
