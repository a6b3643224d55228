package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svcdev/svc/internal/health"
)

// Redis ping cadence: an outage shows in /readyz within about two seconds.
const (
	redisPingEvery   = 2 * time.Second
	redisPingTimeout = time.Second
)

// monitorRedis pings Redis until ctx ends and records the outcome for /readyz.
// Redis carries only live data (stream tails, rate limits), so an outage degrades
// the process instead of stopping it, and the client reconnects when it returns.
func monitorRedis(ctx context.Context, rdb *redis.Client, h *health.Checker, log *slog.Logger) error {
	ticker := time.NewTicker(redisPingEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			pingRedis(ctx, rdb, h, log)
		}
	}
}

func pingRedis(ctx context.Context, rdb *redis.Client, h *health.Checker, log *slog.Logger) {
	pctx, cancel := context.WithTimeout(ctx, redisPingTimeout)
	defer cancel()
	err := rdb.Ping(pctx).Err()
	if ctx.Err() != nil {
		return
	}
	wasDown := h.RedisDown()
	h.SetRedisUp(err == nil)
	switch {
	case err != nil && !wasDown:
		log.Warn("redis is unreachable; live streams and rate limits pause until it returns", "error", err.Error())
	case err == nil && wasDown:
		log.Info("redis is reachable again")
	}
}
