package dbx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	schema "github.com/svcdev/svc/sql"
)

// migrationLockID is the advisory lock every migrating process takes, so that
// concurrent starts against one database migrate it exactly once.
const migrationLockID int64 = 0x7376635f6d696772 // "svc_migr"

// ErrMigrationLockTimeout means another process held the migration lock for longer
// than database.migration_advisory_lock_timeout.
var ErrMigrationLockTimeout = errors.New("timed out waiting for the migration lock")

// MigrateResult says what a migration run did.
type MigrateResult struct {
	From, To int64
	Applied  []int64
}

// Migrate upgrades the schema to this binary's version while holding the migration
// advisory lock. It waits at most lockTimeout for the lock; a process that gets the
// lock after another one migrated finds nothing to do. It never downgrades.
func Migrate(ctx context.Context, pool *pgxpool.Pool, lockTimeout time.Duration, log *slog.Logger) (MigrateResult, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return MigrateResult{}, fmt.Errorf("acquire connection for migration lock: %w", err)
	}
	defer conn.Release()

	// lock_timeout bounds the wait in the server, so the wait needs no polling and
	// the lock goes to the first waiter as soon as it is free.
	ms := max(lockTimeout.Milliseconds(), 1)
	if _, err := conn.Exec(ctx, "SELECT set_config('lock_timeout', $1, false)", fmt.Sprintf("%dms", ms)); err != nil {
		return MigrateResult{}, fmt.Errorf("set lock_timeout: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "RESET lock_timeout") }()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLockID); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == codeLockNotAvailable {
			return MigrateResult{}, fmt.Errorf("%w after %s: another process is migrating this database (raise database.migration_advisory_lock_timeout to wait longer)",
				ErrMigrationLockTimeout, lockTimeout)
		}
		return MigrateResult{}, fmt.Errorf("take migration lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLockID)
	}()

	state, err := ReadSchema(ctx, conn)
	if err != nil {
		return MigrateResult{}, err
	}
	res := MigrateResult{From: state.Current(), To: state.Current()}
	if state.Newest() > schema.Version() {
		return res, fmt.Errorf("database schema version %d is newer than this build's %d: refusing to touch it", state.Newest(), schema.Version())
	}
	if len(state.Missing()) == 0 {
		return res, nil
	}

	// goose gets its own connection rather than one from the pool: the lock already
	// holds a pooled connection, and a pool of one would otherwise deadlock.
	db := stdlib.OpenDB(*pool.Config().ConnConfig.Copy())
	defer db.Close()
	db.SetMaxOpenConns(1)
	provider, err := goose.NewProvider(goose.DialectPostgres, db, schema.Migrations)
	if err != nil {
		return res, fmt.Errorf("load migrations: %w", err)
	}
	results, err := provider.Up(ctx)
	for _, r := range results {
		if r.Error == nil {
			res.Applied = append(res.Applied, r.Source.Version)
			res.To = r.Source.Version
			log.InfoContext(ctx, "migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration_ms", r.Duration.Milliseconds())
		}
	}
	if err != nil {
		return res, fmt.Errorf("migrate: %w", err)
	}
	return res, nil
}
