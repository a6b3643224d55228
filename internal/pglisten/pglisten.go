// Package pglisten listens for PostgreSQL notifications on a connection of
// its own and hands each one to a callback. The outbox engine (svc_outbox)
// and the worker (svc_runs, svc_run_cancel) use it to act as soon as a
// transaction that concerns them commits.
//
// Notifications only hurry things along: a notification sent while nobody
// listens is lost, so each user also looks on a timer, and catches up each
// time the listener starts listening (Config.ListenFunc). When the connection
// fails, the listener logs the loss once and connects again after a pause
// that doubles while connecting keeps failing
// (docs/decisions/0049-outbox-loop-and-listener.md).
package pglisten

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Default bounds of the pause before listening again.
const (
	DefaultMinRetry = time.Second
	DefaultMaxRetry = 10 * time.Second
)

// closeTimeout bounds closing the connection when the listener stops.
const closeTimeout = time.Second

// Config configures a Listener.
type Config struct {
	// Channels are the channels to listen on.
	Channels []string
	// NotifyFunc is called with each notification's channel and payload, in
	// the order they arrive, on the listener's goroutine: it should return
	// quickly.
	NotifyFunc func(channel, payload string)
	// ListenFunc, when set, is called each time the listener starts
	// listening: first, and again after each reconnection. Notifications
	// sent while it did not listen are lost, so this is where its user
	// catches up.
	ListenFunc func()
	// Subject names the notifications in the log: "run" logs "run
	// notifications lost; listening again".
	Subject string
	// MinRetry and MaxRetry bound the pause before listening again after a
	// failure: it starts at MinRetry and doubles, up to MaxRetry, while
	// connecting keeps failing. Zero means DefaultMinRetry and
	// DefaultMaxRetry.
	MinRetry, MaxRetry time.Duration
}

// Listener listens for notifications on a dedicated connection, made with the
// pool's connection settings but outside the pool.
type Listener struct {
	pool *pgxpool.Pool
	cfg  Config
	log  *slog.Logger

	listening chan struct{}
	once      sync.Once
}

// New returns a listener; Run starts it.
func New(pool *pgxpool.Pool, cfg Config, log *slog.Logger) *Listener {
	if cfg.MinRetry <= 0 {
		cfg.MinRetry = DefaultMinRetry
	}
	if cfg.MaxRetry < cfg.MinRetry {
		cfg.MaxRetry = max(DefaultMaxRetry, cfg.MinRetry)
	}
	return &Listener{pool: pool, cfg: cfg, log: log, listening: make(chan struct{})}
}

// Listening is closed once the listener first listens.
func (l *Listener) Listening() <-chan struct{} { return l.listening }

// Run listens until ctx ends, connecting again after each failure, then
// closes its connection and returns.
func (l *Listener) Run(ctx context.Context) {
	retry := l.cfg.MinRetry
	lost := false // the loss is logged; set until the listener listens again
	for {
		listened, err := l.listen(ctx, func() {
			if lost {
				l.log.Info(l.cfg.Subject + " notifications listened for again")
				lost = false
			}
			retry = l.cfg.MinRetry
		})
		if ctx.Err() != nil {
			return
		}
		if !lost {
			l.log.Warn(l.cfg.Subject+" notifications lost; listening again",
				"channels", strings.Join(l.cfg.Channels, ","), "error", err.Error(), "retry_in", retry.String())
			lost = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
		if !listened {
			retry = min(2*retry, l.cfg.MaxRetry)
		}
	}
}

// listen connects, listens and hands on notifications until the connection
// fails or ctx ends. It calls listening once it listens and answers whether
// it did.
func (l *Listener) listen(ctx context.Context, listening func()) (bool, error) {
	conn, err := pgx.ConnectConfig(ctx, l.pool.Config().ConnConfig.Copy())
	if err != nil {
		return false, err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	stmts := make([]string, len(l.cfg.Channels))
	for i, ch := range l.cfg.Channels {
		stmts[i] = "LISTEN " + pgx.Identifier{ch}.Sanitize()
	}
	if _, err := conn.Exec(ctx, strings.Join(stmts, "; ")); err != nil {
		return false, err
	}
	listening()
	l.once.Do(func() { close(l.listening) })
	if l.cfg.ListenFunc != nil {
		l.cfg.ListenFunc()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		l.cfg.NotifyFunc(n.Channel, n.Payload)
	}
}
