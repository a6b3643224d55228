package dbx_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/testdb"
)

// pgCode returns the SQLSTATE of err, or "".
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

func TestTranslate(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		url  string
		pool *pgxpool.Pool
	}

	setup := func(t *testing.T) *testBundle {
		t.Helper()
		url := testdb.NewURL(t)
		pool := openPool(t, url, dbx.PoolOptions{})
		// The database is the test's own, so a plain table is as private as a temp one.
		_, err := pool.Exec(t.Context(), `
			CREATE TABLE widget (
				id     bigint PRIMARY KEY,
				name   text   NOT NULL UNIQUE CHECK (name <> ''),
				doc    jsonb,
				parent bigint REFERENCES widget (id)
			)`)
		require.NoError(t, err)
		return &testBundle{url: url, pool: pool}
	}

	t.Run("Nil", func(t *testing.T) {
		t.Parallel()

		require.NoError(t, dbx.Translate(nil, "widget"))
	})

	t.Run("AppErrorPassesThrough", func(t *testing.T) {
		t.Parallel()

		in := apperr.InvalidField("name", "must not be empty")
		require.Same(t, in, dbx.Translate(in, "widget"))
		wrapped := fmt.Errorf("save: %w", in)
		require.Equal(t, wrapped, dbx.Translate(wrapped, "widget"))
	})

	t.Run("NoRowsIsNotFound", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		var id int64
		err := bundle.pool.QueryRow(t.Context(), "SELECT id FROM widget WHERE id = 1").Scan(&id)
		require.ErrorIs(t, err, pgx.ErrNoRows)

		got := dbx.Translate(err, "widget")
		require.Equal(t, apperr.KindNotFound, apperr.KindOf(got))
		require.Equal(t, "widget not found", mustAppErr(t, got).Msg)

		got = dbx.Translate(fmt.Errorf("get widget: %w", err), "")
		require.Equal(t, apperr.KindNotFound, apperr.KindOf(got))
		require.Equal(t, "resource not found", mustAppErr(t, got).Msg)
	})

	t.Run("UniqueViolationIsAlreadyExists", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		_, err := bundle.pool.Exec(t.Context(), "INSERT INTO widget (id, name) VALUES (1, 'a')")
		require.NoError(t, err)
		_, err = bundle.pool.Exec(t.Context(), "INSERT INTO widget (id, name) VALUES (2, 'a')")
		require.Equal(t, "23505", pgCode(err))

		got := dbx.Translate(err, "widget")
		require.Equal(t, apperr.KindAlreadyExists, apperr.KindOf(got))
		require.Equal(t, "widget already exists", mustAppErr(t, got).Msg)
		require.Equal(t, "23505", pgCode(got), "the cause stays available to logs")
	})

	t.Run("ForeignKeyViolationIsNotFound", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		_, err := bundle.pool.Exec(t.Context(), "INSERT INTO widget (id, name, parent) VALUES (1, 'a', 42)")
		require.Equal(t, "23503", pgCode(err))
		require.Equal(t, apperr.KindNotFound, apperr.KindOf(dbx.Translate(err, "widget")))
	})

	t.Run("CheckViolationIsInvalidArgument", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		_, err := bundle.pool.Exec(t.Context(), "INSERT INTO widget (id, name) VALUES (1, '')")
		require.Equal(t, "23514", pgCode(err))
		require.Equal(t, apperr.KindInvalidArgument, apperr.KindOf(dbx.Translate(err, "widget")))
	})

	// NUL in any string is a 400, not a 500.
	t.Run("NULInTextIsInvalidArgument", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		_, err := bundle.pool.Exec(t.Context(), "INSERT INTO widget (id, name) VALUES (1, $1)", "a\u0000b")
		require.Equal(t, "22021", pgCode(err), "PostgreSQL rejects NUL in text as character_not_in_repertoire")
		require.Equal(t, apperr.KindInvalidArgument, apperr.KindOf(dbx.Translate(err, "widget")))
	})

	t.Run("NULInJSONBIsInvalidArgument", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		_, err := bundle.pool.Exec(t.Context(), "INSERT INTO widget (id, name, doc) VALUES (1, 'a', $1)", map[string]string{"k": "a\u0000b"})
		require.Equal(t, "22P05", pgCode(err), "PostgreSQL rejects \\u0000 in jsonb as untranslatable_character")
		require.Equal(t, apperr.KindInvalidArgument, apperr.KindOf(dbx.Translate(err, "widget")))
	})

	t.Run("OtherServerErrorsUnchanged", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		_, err := bundle.pool.Exec(t.Context(), "SELECT no_such_column FROM widget")
		require.Equal(t, "42703", pgCode(err))
		require.Equal(t, err, dbx.Translate(err, "widget"))
		require.Equal(t, apperr.KindInternal, apperr.KindOf(dbx.Translate(err, "widget")))
	})

	t.Run("CancelledBeforeQueryIsUnavailable", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := bundle.pool.Exec(ctx, "SELECT 1")
		require.ErrorIs(t, err, context.Canceled)

		got := dbx.Translate(err, "widget")
		require.Equal(t, apperr.KindUnavailable, apperr.KindOf(got))
		require.ErrorIs(t, got, context.Canceled, "callers can still tell a cancellation")
	})

	t.Run("CancelledDuringQueryIsUnavailable", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		errc := make(chan error, 1)
		go func() {
			_, err := bundle.pool.Exec(ctx, "SELECT pg_sleep(30) /* translate-cancel */")
			errc <- err
		}()
		waitForActiveQuery(t, bundle.pool, "%translate-cancel%")
		cancel()

		var err error
		select {
		case err = <-errc:
		case <-time.After(10 * time.Second):
			t.Fatal("the query did not end after its context was cancelled")
		}
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, apperr.KindUnavailable, apperr.KindOf(dbx.Translate(err, "widget")))
	})

	t.Run("DeadlineDuringQueryIsUnavailable", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err := bundle.pool.Exec(ctx, "SELECT pg_sleep(30)")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, apperr.KindUnavailable, apperr.KindOf(dbx.Translate(err, "widget")))
	})

	t.Run("StatementTimeoutIsUnavailable", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		err := dbx.WithTx(t.Context(), bundle.pool, func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 50"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "SELECT pg_sleep(30)")
			return err
		})
		require.Equal(t, "57014", pgCode(err))
		require.Equal(t, apperr.KindUnavailable, apperr.KindOf(dbx.Translate(err, "widget")))
	})

	// A database restart ends sessions with 57P01.
	t.Run("TerminatedSessionIsUnavailable", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		conn, err := bundle.pool.Acquire(t.Context())
		require.NoError(t, err)
		defer conn.Release()
		var terminated bool
		require.NoError(t, bundle.pool.QueryRow(t.Context(), "SELECT pg_terminate_backend($1, 10000)", conn.Conn().PgConn().PID()).Scan(&terminated))
		require.True(t, terminated)

		_, err = conn.Exec(t.Context(), "SELECT 1")
		require.Error(t, err)
		require.Equal(t, apperr.KindUnavailable, apperr.KindOf(dbx.Translate(err, "widget")), "got %v", err)
	})

	t.Run("UnreachableServerIsUnavailable", func(t *testing.T) {
		t.Parallel()

		pool := openPool(t, "postgres://svc:hunter2@127.0.0.1:1/appdb?sslmode=disable", dbx.PoolOptions{ConnectTimeout: 2 * time.Second})
		_, err := pool.Exec(t.Context(), "SELECT 1")
		require.Error(t, err)
		require.Equal(t, apperr.KindUnavailable, apperr.KindOf(dbx.Translate(err, "widget")))
	})

	// A server error while connecting (here: no such database) must not be taken
	// for a query error.
	t.Run("ServerRefusingConnectionIsUnavailable", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		pool := openPool(t, testdb.WithDatabase(t, bundle.url, "svc_no_such_database"), dbx.PoolOptions{})
		_, err := pool.Exec(t.Context(), "SELECT 1")
		require.Equal(t, "3D000", pgCode(err))
		require.Equal(t, apperr.KindUnavailable, apperr.KindOf(dbx.Translate(err, "widget")))
	})
}

func mustAppErr(t *testing.T, err error) *apperr.Error {
	t.Helper()
	ae, ok := apperr.As(err)
	require.True(t, ok, "want an *apperr.Error, got %T: %v", err, err)
	return ae
}

// waitForActiveQuery waits until a query whose text matches like runs on the server.
func waitForActiveQuery(t *testing.T, pool *pgxpool.Pool, like string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		err := pool.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1 AND pid <> pg_backend_pid()", like).Scan(&n)
		return err == nil && n > 0
	}, 10*time.Second, 10*time.Millisecond)
}

func TestWithTx(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		pool *pgxpool.Pool
	}

	setup := func(t *testing.T) *testBundle {
		t.Helper()
		// One connection: a transaction that leaked its connection would block the next query.
		pool := openPool(t, testdb.NewURL(t), dbx.PoolOptions{MaxConns: 1})
		_, err := pool.Exec(t.Context(), "CREATE TABLE note (id bigint PRIMARY KEY, body text NOT NULL)")
		require.NoError(t, err)
		return &testBundle{pool: pool}
	}

	noteExists := func(t *testing.T, pool *pgxpool.Pool, id int64) bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		var exists bool
		require.NoError(t, pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM note WHERE id = $1)", id).Scan(&exists))
		return exists
	}

	t.Run("WithTxVCommits", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		body, err := dbx.WithTxV(t.Context(), bundle.pool, func(ctx context.Context, tx pgx.Tx) (string, error) {
			var body string
			err := tx.QueryRow(ctx, "INSERT INTO note (id, body) VALUES (1, 'hello') RETURNING body").Scan(&body)
			return body, err
		})
		require.NoError(t, err)
		require.Equal(t, "hello", body)
		require.True(t, noteExists(t, bundle.pool, 1))
	})

	t.Run("WithTxVRollsBackOnError", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		boom := errors.New("boom")
		body, err := dbx.WithTxV(t.Context(), bundle.pool, func(ctx context.Context, tx pgx.Tx) (string, error) {
			if _, err := tx.Exec(ctx, "INSERT INTO note (id, body) VALUES (1, 'hello')"); err != nil {
				return "", err
			}
			return "partial", boom
		})
		require.ErrorIs(t, err, boom)
		require.Empty(t, body, "no value on error")
		require.False(t, noteExists(t, bundle.pool, 1))
	})

	t.Run("WithTxCommitsAndRollsBack", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		require.NoError(t, dbx.WithTx(t.Context(), bundle.pool, func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO note (id, body) VALUES (1, 'kept')")
			return err
		}))
		boom := errors.New("boom")
		require.ErrorIs(t, dbx.WithTx(t.Context(), bundle.pool, func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO note (id, body) VALUES (2, 'dropped')")
			require.NoError(t, err)
			return boom
		}), boom)
		require.True(t, noteExists(t, bundle.pool, 1))
		require.False(t, noteExists(t, bundle.pool, 2))
	})

	t.Run("PanicRollsBackAndReleases", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		require.Panics(t, func() {
			_ = dbx.WithTx(t.Context(), bundle.pool, func(ctx context.Context, tx pgx.Tx) error {
				_, err := tx.Exec(ctx, "INSERT INTO note (id, body) VALUES (1, 'hello')")
				require.NoError(t, err)
				panic("bug")
			})
		})
		require.False(t, noteExists(t, bundle.pool, 1))
	})

	t.Run("RollsBackWhenContextEnds", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		ctx, cancel := context.WithCancel(t.Context())
		err := dbx.WithTx(ctx, bundle.pool, func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "INSERT INTO note (id, body) VALUES (1, 'hello')"); err != nil {
				return err
			}
			cancel()
			return nil
		})
		require.Error(t, err, "the commit cannot happen after the context ended")
		require.Equal(t, apperr.KindUnavailable, apperr.KindOf(err))
		require.False(t, noteExists(t, bundle.pool, 1))
	})

	t.Run("BeginFailureIsUnavailable", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		called := false
		_, err := dbx.WithTxV(ctx, bundle.pool, func(ctx context.Context, tx pgx.Tx) (int, error) {
			called = true
			return 1, nil
		})
		require.Equal(t, apperr.KindUnavailable, apperr.KindOf(err))
		require.False(t, called)
	})
}

func TestNewPool(t *testing.T) {
	t.Parallel()

	t.Run("InvalidURLDoesNotLeakPassword", func(t *testing.T) {
		t.Parallel()

		_, err := dbx.NewPool(t.Context(), "postgres://svc:hunter2@db.example:notaport/app", dbx.PoolOptions{})
		require.Error(t, err)
		require.NotContains(t, err.Error(), "hunter2")
		require.Contains(t, err.Error(), "database.url")
	})

	t.Run("NamesApplication", func(t *testing.T) {
		t.Parallel()

		url := testdb.NewURL(t)
		pool := openPool(t, url, dbx.PoolOptions{MaxConns: 3})
		require.Equal(t, int32(3), pool.Config().MaxConns)
		var name string
		require.NoError(t, pool.QueryRow(t.Context(), "SHOW application_name").Scan(&name))
		require.Equal(t, "svc", name)

		custom := openPool(t, url+"&application_name=svc-worker", dbx.PoolOptions{})
		require.NoError(t, custom.QueryRow(t.Context(), "SHOW application_name").Scan(&name))
		require.Equal(t, "svc-worker", name, "an operator's application_name wins")
	})

	t.Run("PingNamesServerNotPassword", func(t *testing.T) {
		t.Parallel()

		pool := openPool(t, "postgres://svc:hunter2@127.0.0.1:1/appdb?sslmode=disable", dbx.PoolOptions{ConnectTimeout: time.Second})
		began := time.Now()
		err := dbx.Ping(t.Context(), pool, 2*time.Second)
		require.Error(t, err)
		require.Less(t, time.Since(began), 5*time.Second)
		require.Contains(t, err.Error(), "127.0.0.1:1/appdb")
		require.NotContains(t, err.Error(), "hunter2")
		require.Equal(t, apperr.KindUnavailable, apperr.KindOf(dbx.Translate(err, "")))
	})

	t.Run("PingSucceeds", func(t *testing.T) {
		t.Parallel()

		pool := openPool(t, testdb.NewURL(t), dbx.PoolOptions{})
		require.NoError(t, dbx.Ping(t.Context(), pool, 5*time.Second))
	})
}

func TestTranslateConcurrencyFailuresAreRetryable(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"40001", "40P01"} {
		err := dbx.Translate(&pgconn.PgError{Code: code, Message: "could not serialize"}, "workspace")
		require.Equal(t, apperr.KindUnavailable, apperr.KindOf(err), code)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, "the cause is kept for logs")
	}
}
