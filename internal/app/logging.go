package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/svcdev/svc/internal/config"
)

// NewLogger builds the process logger: JSON (or text) records on w at the
// configured level.
func NewLogger(cfg config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Level)) // validated by config
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// redisLogger routes go-redis's internal messages (pool dial failures while Redis
// is down, for example) to slog at debug level; the Redis monitor reports outages.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, fmt.Sprintf(format, v...), "component", "redis")
}

// routeRedisLogs sends go-redis's process-wide logger to log.
func routeRedisLogs(log *slog.Logger) { redis.SetLogger(redisLogger{log: log}) }
