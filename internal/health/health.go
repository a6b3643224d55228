// Package health decides what /healthz and /readyz answer.
package health

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/svcdev/svc/internal/dbx"
)

// Dependencies whose failure makes a process not ready.
const (
	DependencyRuntime  = "runtime"
	DependencyDatabase = "database"
)

// DegradedRedis names Redis in the degraded list while it is unreachable.
const DegradedRedis = "redis"

// Report is the outcome of a readiness check.
type Report struct {
	Ready      bool
	Dependency string   // set when not ready
	Degraded   []string // non-essential dependencies that are down
}

// TaskWatcher tells whether every background task still runs.
type TaskWatcher interface {
	Healthy() (ok bool, stoppedTask string)
}

// Checker holds the state readiness is computed from.
type Checker struct {
	Role    string
	DB      dbx.Querier // nil until the pool exists
	Tasks   TaskWatcher // nil until the supervisor exists
	Timeout time.Duration

	started    atomic.Bool
	stopping   atomic.Bool
	redisState atomic.Int32 // 0 unknown or not configured, 1 up, 2 down
}

// MarkStarted records that startup finished.
func (c *Checker) MarkStarted() { c.started.Store(true) }

// MarkStopping records that shutdown began; the process stops being ready.
func (c *Checker) MarkStopping() { c.stopping.Store(true) }

// Started reports whether startup finished and shutdown has not begun.
func (c *Checker) Started() bool { return c.started.Load() && !c.stopping.Load() }

// SetRedisUp records whether Redis answered its last ping.
func (c *Checker) SetRedisUp(up bool) {
	if up {
		c.redisState.Store(1)
	} else {
		c.redisState.Store(2)
	}
}

// RedisDown reports whether Redis failed its last ping.
func (c *Checker) RedisDown() bool { return c.redisState.Load() == 2 }

// Ready checks readiness now: startup done, every task running, and the schema
// answering within the time-out. The schema may be newer than this build's, since
// older replicas keep serving during a rolling upgrade.
func (c *Checker) Ready(ctx context.Context) Report {
	if !c.Started() || c.DB == nil {
		return Report{Dependency: DependencyRuntime}
	}
	if c.Tasks != nil {
		if ok, _ := c.Tasks.Healthy(); !ok {
			return Report{Dependency: DependencyRuntime}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	if err := dbx.CheckSchema(ctx, c.DB, true); err != nil {
		return Report{Dependency: DependencyDatabase}
	}
	r := Report{Ready: true}
	if c.RedisDown() {
		r.Degraded = []string{DegradedRedis}
	}
	return r
}
