// Package supervisor runs a process's background tasks and tells whether they all
// still run. A task that stops before the supervisor is stopped, by returning or
// by panicking, makes the process not ready: the probe then fails and the
// orchestrator replaces the process. Tasks handle their own transient failures.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
)

// Task is one long-running background part of a process.
type Task struct {
	Name string
	// Run works until ctx is cancelled. Returning earlier means the task stopped.
	Run func(ctx context.Context) error
}

// Supervisor starts tasks and watches them.
type Supervisor struct {
	log *slog.Logger

	mu       sync.Mutex
	tasks    []Task
	ctx      context.Context
	cancel   context.CancelFunc
	stopping bool
	stopped  string // name of the first task that stopped on its own
	wg       sync.WaitGroup
}

// New returns a supervisor with no tasks.
func New(log *slog.Logger) *Supervisor { return &Supervisor{log: log} }

// Add registers a task; tasks added after Start begin at once.
func (s *Supervisor) Add(t Task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tasks = append(s.tasks, t)
	if s.cancel != nil && !s.stopping {
		s.launchLocked(t)
	}
}

// Start runs every registered task. ctx bounds them all.
func (s *Supervisor) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.ctx = ctx
	for _, t := range s.tasks {
		s.launchLocked(t)
	}
}

func (s *Supervisor) launchLocked(t Task) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := s.run(t)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.stopping {
			return
		}
		if s.stopped == "" {
			s.stopped = t.Name
		}
		if err == nil {
			err = errors.New("returned before shutdown")
		}
		s.log.Error("background task stopped; the process is no longer ready", "task", t.Name, "error", err.Error())
	}()
}

func (s *Supervisor) run(t Task) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
			s.log.Error("background task panicked", "task", t.Name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	return t.Run(s.ctx)
}

// Healthy reports whether every task still runs; otherwise it names the first
// task that stopped.
func (s *Supervisor) Healthy() (ok bool, stoppedTask string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped == "", s.stopped
}

// Stop cancels every task and waits for them until ctx ends. It is safe to call
// more than once and before Start.
func (s *Supervisor) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopping = true
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		select {
		case <-done: // both were ready; the tasks did stop
			return nil
		default:
		}
		return fmt.Errorf("background tasks did not stop in time: %w", ctx.Err())
	}
}
