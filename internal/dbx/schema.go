package dbx

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	schema "github.com/svcdev/svc/sql"
)

// ErrSchemaMismatch means the database's schema is not the one this binary expects.
var ErrSchemaMismatch = errors.New("database schema does not match this build")

// Querier is what reading the schema needs: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// SchemaState is the set of migrations applied to a database.
type SchemaState struct {
	Applied []int64 // ascending
}

// Current is the highest applied version that this binary knows, or 0.
func (s SchemaState) Current() int64 {
	var cur int64
	for _, v := range s.Applied {
		if slices.Contains(schema.Versions(), v) {
			cur = max(cur, v)
		}
	}
	return cur
}

// Newest is the highest applied version, known to this binary or not.
func (s SchemaState) Newest() int64 {
	if len(s.Applied) == 0 {
		return 0
	}
	return s.Applied[len(s.Applied)-1]
}

// Missing lists this binary's migrations that are not applied.
func (s SchemaState) Missing() []int64 {
	var out []int64
	for _, v := range schema.Versions() {
		if _, found := slices.BinarySearch(s.Applied, v); !found {
			out = append(out, v)
		}
	}
	return out
}

// ReadSchema reads the applied migrations without changing anything; a database
// that was never migrated has none.
func ReadSchema(ctx context.Context, q Querier) (SchemaState, error) {
	// goose's table records every up (and, in older versions, down) as a row; a
	// version counts as applied when its newest row says so.
	rows, err := q.Query(ctx, `
		SELECT version_id FROM (
			SELECT DISTINCT ON (version_id) version_id, is_applied
			FROM goose_db_version
			WHERE version_id > 0
			ORDER BY version_id, id DESC
		) v WHERE is_applied ORDER BY version_id`)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
			return SchemaState{}, nil
		}
		return SchemaState{}, fmt.Errorf("read schema version: %w", err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
			return SchemaState{}, nil
		}
		return SchemaState{}, fmt.Errorf("read schema version: %w", err)
	}
	return SchemaState{Applied: applied}, nil
}

// CheckSchema verifies that the database holds exactly this binary's schema. With
// allowNewer, a database migrated further by a newer build also passes: during a
// rolling upgrade, older replicas keep serving against the migrated schema.
func CheckSchema(ctx context.Context, q Querier, allowNewer bool) error {
	state, err := ReadSchema(ctx, q)
	if err != nil {
		return err
	}
	want := schema.Version()
	switch missing := state.Missing(); {
	case len(state.Applied) == 0:
		return fmt.Errorf("%w: the database has no schema yet; this build expects version %d: run `svc migrate`", ErrSchemaMismatch, want)
	case len(missing) > 0 && state.Newest() <= want:
		return fmt.Errorf("%w: the database is at version %d, this build expects %d (missing %v): run `svc migrate`", ErrSchemaMismatch, state.Current(), want, missing)
	case len(missing) > 0:
		return fmt.Errorf("%w: the database lacks migrations %v of this build yet has newer ones (up to %d): run `svc migrate` with the build that matches it", ErrSchemaMismatch, missing, state.Newest())
	case state.Newest() > want && !allowNewer:
		return fmt.Errorf("%w: the database is at version %d, newer than this build's %d: run the newer svc build, or `svc migrate` with it", ErrSchemaMismatch, state.Newest(), want)
	}
	return nil
}
