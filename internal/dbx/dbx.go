// Package dbx holds the service's PostgreSQL plumbing: the connection pool,
// explicit transactions, the one translation of database errors into apperr
// kinds, and schema migration and checking.
package dbx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/internal/apperr"
)

// PoolOptions sizes and bounds the connection pool.
type PoolOptions struct {
	MaxConns       int
	ConnectTimeout time.Duration
	// IdleInTransaction makes the server end a session that sits idle inside
	// a transaction for longer (idle_in_transaction_session_timeout), so a
	// process frozen or cut off mid-transaction cannot hold row locks (a
	// run's, which the lease sweep skips while locked) for longer than this.
	// 0 leaves the server's setting; the URL's own setting wins.
	IdleInTransaction time.Duration
	// Tracer, when set, traces the pool's queries (tracing.PoolTracer).
	Tracer pgx.QueryTracer
}

// NewPool builds a pool without connecting; connections open on first use, and
// the pool reconnects by itself after the database restarts.
func NewPool(ctx context.Context, url string, opts PoolOptions) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parse error can quote the URL, password included: never pass it on.
		return nil, errors.New("database.url is not a valid PostgreSQL connection URL")
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = int32(opts.MaxConns)
	}
	if opts.ConnectTimeout > 0 {
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "svc"
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !ok && opts.IdleInTransaction > 0 {
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(opts.IdleInTransaction.Milliseconds(), 10)
	}
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database pool: %w", err)
	}
	return pool, nil
}

// Ping checks that the database answers within timeout, naming the server (never
// the password) when it does not.
func Ping(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := pool.Ping(ctx); err != nil {
		cc := pool.Config().ConnConfig
		return fmt.Errorf("connect to database %s:%d/%s: %w", cc.Host, cc.Port, cc.Database, err)
	}
	return nil
}

// WithTx runs fn in a transaction and commits when fn returns nil. Its error
// is translated as WithTxV's is.
func WithTx(ctx context.Context, pool *pgxpool.Pool, fn func(ctx context.Context, tx pgx.Tx) error) error {
	_, err := WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (struct{}, error) {
		return struct{}{}, fn(ctx, tx)
	})
	return err
}

// WithTxV runs fn in a transaction, commits when fn returns no error, and returns
// fn's value. The rollback runs even when ctx is already cancelled.
//
// Every error WithTxV returns is translated (Translate with no resource name):
// fn returns its queries' errors as they come, naming a resource only where a
// missing row or a duplicate is the answer the caller sees ("thread not found"),
// and a lost database anywhere in fn is Unavailable without fn saying so.
func WithTxV[T any](ctx context.Context, pool *pgxpool.Pool, fn func(ctx context.Context, tx pgx.Tx) (T, error)) (T, error) {
	var zero T
	tx, err := pool.Begin(ctx)
	if err != nil {
		return zero, Translate(err, "")
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	v, err := fn(ctx, tx)
	if err != nil {
		return zero, Translate(err, "")
	}
	if err := tx.Commit(ctx); err != nil {
		return zero, Translate(err, "")
	}
	return v, nil
}

// PostgreSQL error codes the service reacts to.
const (
	codeUniqueViolation          = "23505"
	codeForeignKeyViolation      = "23503"
	codeCheckViolation           = "23514"
	codeUntranslatableCharacter  = "22P05"
	codeCharacterNotInRepertoire = "22021"
	codeLockNotAvailable         = "55P03"
	codeSerializationFailure     = "40001"
	codeDeadlockDetected         = "40P01"
	codeTooManyConnections       = "53300"
	codeQueryCanceled            = "57014" // statement_timeout, or a cancel request
	codeAdminShutdown            = "57P01" // the server is stopping or restarting
	codeCrashShutdown            = "57P02"
	codeCannotConnectNow         = "57P03" // the server is starting up
)

// Translate turns a database error into an apperr kind, once, at the database
// edge: no rows is NotFound(resource), a unique violation is AlreadyExists, text
// PostgreSQL cannot store is InvalidArgument, and a connection that cannot be
// made or breaks under a statement, a server shutting down or starting, a
// time-out or a cancelled context is Unavailable.
// An error that already has a kind is returned unchanged, so the first
// translation, the one nearest the query, wins; anything else is returned
// unchanged and becomes a 500. The translated error keeps err as its cause.
//
// WithTx and WithTxV translate what their function returns, so inside a
// transaction Translate is needed only to name the resource of a lookup or an
// insert whose miss or duplicate the caller sees. A read outside a transaction
// translates its own error.
func Translate(err error, resource string) error {
	if err == nil {
		return nil
	}
	if _, ok := apperr.As(err); ok {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		if resource == "" {
			resource = "resource"
		}
		return apperr.Wrap(apperr.KindNotFound, resource+" not found", err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case codeUniqueViolation:
			what := resource
			if what == "" {
				what = "resource"
			}
			return apperr.Wrap(apperr.KindAlreadyExists, what+" already exists", err)
		case codeForeignKeyViolation:
			return apperr.Wrap(apperr.KindNotFound, "a referenced resource was not found", err)
		case codeCheckViolation:
			return apperr.Wrap(apperr.KindInvalidArgument, "request is invalid", err)
		case codeSerializationFailure, codeDeadlockDetected:
			// Another transaction won a race; the request can simply be retried.
			return apperr.Unavailable("the request collided with a concurrent change; retry it", err)
		case codeUntranslatableCharacter, codeCharacterNotInRepertoire:
			return apperr.Wrap(apperr.KindInvalidArgument, "text contains characters that cannot be stored", err)
		case codeTooManyConnections, codeQueryCanceled, codeAdminShutdown, codeCrashShutdown, codeCannotConnectNow:
			return apperr.Unavailable("the database is unavailable", err)
		}
		if strings.HasPrefix(pgErr.Code, "08") { // connection_exception class
			return apperr.Unavailable("the database is unavailable", err)
		}
		// Other server errors fall through: one raised while connecting (inside a
		// ConnectError) still means the database is unavailable.
	}
	// pgx returns ctx.Err() itself when a query is cancelled: the caller gave up or
	// the process is stopping, which is not a bug in the request.
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		pgconn.SafeToRetry(err) || pgconn.Timeout(err) || isConnectError(err) || isBrokenConnection(err) {
		return apperr.Unavailable("the database is unavailable", err)
	}
	return err
}

// IsNotFound reports whether err says a query found no row (pgx.ErrNoRows),
// as it came from the query or after Translate made it NotFound. Code that
// treats a missing row as an answer, not a failure, asks this rather than
// comparing with pgx's sentinel.
func IsNotFound(err error) bool {
	return errors.Is(err, pgx.ErrNoRows)
}

func isConnectError(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}

// isBrokenConnection reports a connection that broke under a statement: the
// server or the network went away without a word, and pgx returns the
// socket's error as it came (an unexpected EOF, a reset).
func isBrokenConnection(err error) bool {
	var opErr *net.OpError
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.As(err, &opErr)
}

// Int32 narrows an optional integer a service validated for an int4
// column; nil stays nil.
func Int32(v *int) *int32 {
	if v == nil {
		return nil
	}
	n := int32(*v)
	return &n
}

// Int widens an optional int4 column's value; nil stays nil.
func Int(v *int32) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}
