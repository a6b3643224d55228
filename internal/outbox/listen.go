package outbox

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// notifyChannel is the PostgreSQL channel Enqueue notifies at commit.
const notifyChannel = "svc_outbox"

// listenRetry is the pause before listening again after the connection failed.
const listenRetry = 2 * time.Second

// Listen wakes the engine whenever a transaction that enqueued a delivery
// commits, so deliveries go out at once rather than at the next
// control.scan_seconds tick. It holds a connection of its own (outside the
// pool) and, when that fails, listens again after a pause; the timed passes
// go on meanwhile, so losing notifications only delays deliveries. It returns
// when ctx ends.
func (e *Engine) Listen(ctx context.Context) error {
	for {
		err := e.listen(ctx)
		if ctx.Err() != nil {
			return nil
		}
		e.log.Warn("outbox notifications lost; listening again", "error", err.Error(), "retry_in", listenRetry.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(listenRetry):
		}
	}
}

func (e *Engine) listen(ctx context.Context) error {
	conn, err := connect(ctx, e.pool)
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	// Deliveries may have been enqueued while nobody listened.
	e.Wake()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		e.Wake()
	}
}

func connect(ctx context.Context, pool *pgxpool.Pool) (*pgx.Conn, error) {
	return pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
}
