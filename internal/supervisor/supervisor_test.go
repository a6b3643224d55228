package supervisor_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/svcdev/svc/internal/supervisor"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const waitFor = 5 * time.Second

// waitClosed fails the test unless ch is closed within waitFor.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitFor):
		t.Fatalf("%s: not within %s", what, waitFor)
	}
}

// blocker is a task that signals when it starts and works until its context ends.
type blocker struct {
	name     string
	started  chan struct{}
	finished chan struct{} // closed after the task saw its context end
}

func newBlocker(name string) *blocker {
	return &blocker{name: name, started: make(chan struct{}), finished: make(chan struct{})}
}

func (b *blocker) task() supervisor.Task {
	return supervisor.Task{Name: b.name, Run: func(ctx context.Context) error {
		close(b.started)
		<-ctx.Done()
		close(b.finished)
		return ctx.Err()
	}}
}

func TestSupervisor(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		sup *supervisor.Supervisor
	}

	setup := func(t *testing.T) *testBundle {
		t.Helper()
		sup := supervisor.New(slog.New(slog.DiscardHandler))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			_ = sup.Stop(ctx)
		})
		return &testBundle{sup: sup}
	}

	// requireStops waits until Healthy reports the named task as stopped.
	requireStops := func(t *testing.T, sup *supervisor.Supervisor, name string) {
		t.Helper()
		require.Eventually(t, func() bool { ok, _ := sup.Healthy(); return !ok }, waitFor, time.Millisecond)
		ok, stopped := sup.Healthy()
		require.False(t, ok)
		require.Equal(t, name, stopped)
	}

	stop := func(t *testing.T, sup *supervisor.Supervisor) error {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), waitFor)
		defer cancel()
		return sup.Stop(ctx)
	}

	t.Run("HealthyWhileTasksRun", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		ok, stopped := bundle.sup.Healthy()
		require.True(t, ok, "healthy before Start")
		require.Empty(t, stopped)

		a, b := newBlocker("a"), newBlocker("b")
		bundle.sup.Add(a.task())
		bundle.sup.Add(b.task())
		bundle.sup.Start(t.Context())
		waitClosed(t, a.started, "task a starts")
		waitClosed(t, b.started, "task b starts")

		ok, stopped = bundle.sup.Healthy()
		require.True(t, ok)
		require.Empty(t, stopped)
	})

	t.Run("TaskReturningEarlyMakesUnhealthy", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		steady := newBlocker("steady")
		bundle.sup.Add(steady.task())
		bundle.sup.Add(supervisor.Task{Name: "quitter", Run: func(context.Context) error { return nil }})
		bundle.sup.Start(t.Context())

		requireStops(t, bundle.sup, "quitter")
		require.NoError(t, stop(t, bundle.sup))
		waitClosed(t, steady.finished, "the other task stops")
		ok, stopped := bundle.sup.Healthy()
		require.False(t, ok, "Stop does not make a failed process healthy again")
		require.Equal(t, "quitter", stopped)
	})

	t.Run("TaskFailingMakesUnhealthy", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		bundle.sup.Add(supervisor.Task{Name: "failer", Run: func(context.Context) error { return errors.New("boom") }})
		bundle.sup.Start(t.Context())
		requireStops(t, bundle.sup, "failer")
	})

	t.Run("TaskPanickingMakesUnhealthy", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		steady := newBlocker("steady")
		bundle.sup.Add(steady.task())
		bundle.sup.Add(supervisor.Task{Name: "panicker", Run: func(context.Context) error { panic("nil map write") }})
		bundle.sup.Start(t.Context())

		requireStops(t, bundle.sup, "panicker")
		// The process survived: the other task still runs until Stop.
		select {
		case <-steady.finished:
			t.Fatal("a panic in one task stopped another")
		default:
		}
		require.NoError(t, stop(t, bundle.sup))
	})

	t.Run("NamesFirstTaskToStop", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		release := make(chan struct{})
		bundle.sup.Add(supervisor.Task{Name: "first", Run: func(context.Context) error { return nil }})
		bundle.sup.Add(supervisor.Task{Name: "second", Run: func(context.Context) error { <-release; return nil }})
		bundle.sup.Start(t.Context())

		requireStops(t, bundle.sup, "first")
		close(release)
		require.NoError(t, stop(t, bundle.sup)) // waits for "second" to have returned
		_, stopped := bundle.sup.Healthy()
		require.Equal(t, "first", stopped)
	})

	t.Run("StopCancelsTasks", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		blockers := []*blocker{newBlocker("a"), newBlocker("b"), newBlocker("c")}
		for _, b := range blockers {
			bundle.sup.Add(b.task())
		}
		bundle.sup.Start(t.Context())
		for _, b := range blockers {
			waitClosed(t, b.started, "task "+b.name+" starts")
		}

		require.NoError(t, stop(t, bundle.sup))
		for _, b := range blockers {
			select {
			case <-b.finished:
			default:
				t.Fatalf("Stop returned before task %s ended", b.name)
			}
		}
		ok, stopped := bundle.sup.Healthy()
		require.True(t, ok, "tasks returning on shutdown are not failures (stopped: %s)", stopped)
	})

	t.Run("TaskReturningErrorAfterStopStaysHealthy", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		started := make(chan struct{})
		bundle.sup.Add(supervisor.Task{Name: "grumpy", Run: func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			return errors.New("could not flush on the way out")
		}})
		bundle.sup.Start(t.Context())
		waitClosed(t, started, "task starts")

		require.NoError(t, stop(t, bundle.sup))
		ok, stopped := bundle.sup.Healthy()
		require.True(t, ok, "stopped: %s", stopped)
	})

	t.Run("StopIsIdempotent", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		b := newBlocker("a")
		bundle.sup.Add(b.task())
		bundle.sup.Start(t.Context())
		waitClosed(t, b.started, "task starts")

		require.NoError(t, stop(t, bundle.sup))
		require.NoError(t, stop(t, bundle.sup))
		ok, _ := bundle.sup.Healthy()
		require.True(t, ok)
	})

	t.Run("StopBeforeStart", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		ran := make(chan struct{})
		bundle.sup.Add(supervisor.Task{Name: "never", Run: func(context.Context) error { close(ran); return nil }})
		require.NoError(t, stop(t, bundle.sup))
		require.NoError(t, stop(t, bundle.sup))
		select {
		case <-ran:
			t.Fatal("Stop started a task")
		default:
		}
		ok, _ := bundle.sup.Healthy()
		require.True(t, ok)
	})

	t.Run("StopTimesOutOnStuckTask", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		started, release := make(chan struct{}), make(chan struct{})
		var releaseOnce sync.Once
		letGo := func() { releaseOnce.Do(func() { close(release) }) }
		t.Cleanup(letGo) // runs before setup's Stop, even when the test fails early
		bundle.sup.Add(supervisor.Task{Name: "stuck", Run: func(context.Context) error {
			close(started)
			<-release // ignores cancellation
			return nil
		}})
		bundle.sup.Start(t.Context())
		waitClosed(t, started, "task starts")

		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		began := time.Now()
		err := bundle.sup.Stop(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "did not stop in time")
		require.Less(t, time.Since(began), 2*time.Second)

		// Once the task lets go, a later Stop completes (and goleak sees no leak).
		letGo()
		require.NoError(t, stop(t, bundle.sup))
		ok, _ := bundle.sup.Healthy()
		require.True(t, ok, "returning after Stop began is not a failure")
	})

	t.Run("TaskAddedAfterStartRuns", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		first := newBlocker("first")
		bundle.sup.Add(first.task())
		bundle.sup.Start(t.Context())
		waitClosed(t, first.started, "first task starts")

		late := newBlocker("late")
		bundle.sup.Add(late.task())
		waitClosed(t, late.started, "task added after Start starts")

		require.NoError(t, stop(t, bundle.sup))
		waitClosed(t, late.finished, "late task sees cancellation")
		ok, _ := bundle.sup.Healthy()
		require.True(t, ok)
	})

	t.Run("TaskAddedAfterStopDoesNotRun", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		bundle.sup.Start(t.Context())
		require.NoError(t, stop(t, bundle.sup))

		ran := make(chan struct{})
		bundle.sup.Add(supervisor.Task{Name: "too late", Run: func(context.Context) error { close(ran); return nil }})
		require.NoError(t, stop(t, bundle.sup)) // would wait for the task had it started
		select {
		case <-ran:
			t.Fatal("a task added after Stop ran")
		default:
		}
		ok, _ := bundle.sup.Healthy()
		require.True(t, ok)
	})

	t.Run("StartTwiceRunsTasksOnce", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		runs := make(chan struct{}, 2)
		bundle.sup.Add(supervisor.Task{Name: "a", Run: func(ctx context.Context) error {
			runs <- struct{}{}
			<-ctx.Done()
			return nil
		}})
		bundle.sup.Start(t.Context())
		bundle.sup.Start(t.Context())
		select {
		case <-runs:
		case <-time.After(waitFor):
			t.Fatal("task did not start")
		}
		require.NoError(t, stop(t, bundle.sup))
		require.Empty(t, runs, "the task ran twice")
	})
}
