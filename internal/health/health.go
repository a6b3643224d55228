// Package health decides what /healthz and /readyz answer.
package health

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/svcdev/svc/internal/dbx"
)

// Dependencies whose failure makes a process not ready.
const (
	DependencyRuntime  = "runtime"
	DependencyDatabase = "database"
)

// Names in the degraded list: dependencies whose loss leaves the process
// ready, because most of what it serves does not need them.
const (
	// DegradedRedis: Redis is unreachable (live streams and rate limits pause).
	DegradedRedis = "redis"
	// DegradedObjectStore: the object store does not answer, or cannot be
	// written; uploads, downloads (and checkpoints) fail until it returns.
	DegradedObjectStore = "object_store"
)

// StoreChecker is what readiness asks of the object store.
type StoreChecker interface {
	Check(ctx context.Context) error
	Describe() string
}

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
	Role  string
	DB    dbx.Querier // nil until the pool exists
	Tasks TaskWatcher // nil until the supervisor exists
	// ObjectStore is checked on every readiness probe; nil skips it.
	ObjectStore StoreChecker
	Timeout     time.Duration
	// Log receives the object store's changes between up and down; nil is silent.
	Log *slog.Logger

	started    atomic.Bool
	stopping   atomic.Bool
	redisState atomic.Int32 // 0 unknown or not configured, 1 up, 2 down
	storeState atomic.Int32 // the same for the object store
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
// answering within the time-out. The object store is checked at the same
// time; readiness depends on the runtime and the database only
// (docs/decisions/0002-health-and-readiness.md), so its loss is reported
// under degraded, like Redis's. The schema may be newer than this binary's, since
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
	// The object store is checked beside the schema, within the same time-out.
	storeErr := make(chan error, 1)
	if c.ObjectStore != nil {
		go func() { storeErr <- c.ObjectStore.Check(ctx) }()
	} else {
		storeErr <- nil
	}
	dbErr := dbx.CheckSchema(ctx, c.DB, true)
	serr := <-storeErr
	if dbErr != nil {
		return Report{Dependency: DependencyDatabase}
	}
	c.noteStore(serr)
	r := Report{Ready: true}
	if c.RedisDown() {
		r.Degraded = append(r.Degraded, DegradedRedis)
	}
	if serr != nil {
		r.Degraded = append(r.Degraded, DegradedObjectStore)
	}
	return r
}

// noteStore logs the object store's changes between up and down.
func (c *Checker) noteStore(err error) {
	state := int32(1)
	if err != nil {
		state = 2
	}
	old := c.storeState.Swap(state)
	if c.Log == nil || old == state {
		return
	}
	switch {
	case err != nil:
		c.Log.Warn("the object store is unavailable; uploads and downloads fail until it returns",
			"object_store", c.ObjectStore.Describe(), "error", err.Error())
	case old == 2:
		c.Log.Info("the object store is available again", "object_store", c.ObjectStore.Describe())
	}
}
