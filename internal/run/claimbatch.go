package run

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
)

// claimLockSQL is RunClaimLock's statement: sqlc makes one call per
// statement, and the claim needs the lock and its statement in one round
// trip.
const claimLockSQL = "SELECT pg_advisory_xact_lock(hashtextextended('svc.run_claim', 0))"

// claimBatch runs a query as the second statement of a batch whose first
// takes the claim lock (RunClaimLock): one round trip, one implicit
// transaction, so the lock is held until the claim statement's writes are
// committed, and that statement's snapshot, taken once the lock is held,
// sees every claim committed before it.
type claimBatch struct {
	pool *pgxpool.Pool
}

var _ db.DBTX = claimBatch{}

func (c claimBatch) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	b := &pgx.Batch{}
	b.Queue(claimLockSQL)
	b.Queue(sql, args...)
	br := c.pool.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (c claimBatch) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	rows.Close()
	return rows.CommandTag(), rows.Err()
}

func (c claimBatch) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		return errRow{err}
	}
	return oneRow{rows}
}

// batchRows are a batch's last rows; closing them ends the batch and with
// it the implicit transaction (and its error, a failed commit, say).
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		if err := r.br.Close(); err != nil && r.err == nil {
			r.err = err
		}
		r.br = nil
	}
}

// Err ends the batch, as Close does, and answers the first error of the
// rows or the batch: callers read it once they are done with the rows.
func (r *batchRows) Err() error {
	r.Close()
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// oneRow reads the first row of rows, as pgx.Row does.
type oneRow struct{ rows pgx.Rows }

func (r oneRow) Scan(dest ...any) error {
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	return r.rows.Err()
}

type errRow struct{ err error }

func (e errRow) Scan(...any) error { return e.err }
