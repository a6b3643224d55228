package tool

import (
	"context"
	"log/slog"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/run"
)

// RunContext is what a toolset builds a run's tools from: the run, the
// lease of the attempt being made, and the configuration of the agent
// revision the run pinned.
type RunContext struct {
	Run    run.Run
	Lease  run.Lease
	Config agent.Config
	// Log is the attempt's logger: its records carry the run's run_id,
	// attempt_id, attempt, workspace_id and thread_id. Never nil.
	Log *slog.Logger
	// closers run when the attempt ends.
	closers *[]func()
}

// NewRunContext returns the context of an attempt of run r under lease l,
// whose agent configuration is cfg, and the function the attempt calls when
// it ends: it runs what the toolsets registered with OnClose, in order.
func NewRunContext(r run.Run, l run.Lease, cfg agent.Config) (RunContext, func()) {
	closers := new([]func())
	rc := RunContext{Run: r, Lease: l, Config: cfg, Log: slog.New(slog.DiscardHandler), closers: closers}
	return rc, func() {
		for _, fn := range *closers {
			fn()
		}
	}
}

// OnClose registers fn to run when the attempt ends (an environment
// instance to close, say).
func (rc RunContext) OnClose(fn func()) { *rc.closers = append(*rc.closers, fn) }

// Toolset builds the tools of one kind (web, environment, memories...) for
// an attempt of a run; it answers none when the agent's configuration asks
// for none. An error that is a *run.Failure fails the run (the run's own
// configuration cannot run: its web provider is gone, say); any other fails
// the attempt.
//
// Every toolset is a package under internal/tool built the same way: New
// takes the domain services it reads through and answers a *Toolset whose
// ForRun method is the Toolset.
type Toolset func(ctx context.Context, rc RunContext) ([]Tool, error)

// PromptSection writes a part of a run's system prompt, after the agent's
// and its skills' instructions (the memories' context, say), from what the
// run is asked (input, its last user message); "" adds nothing. It is
// written again at each attempt.
type PromptSection func(ctx context.Context, rc RunContext, input string) (string, error)
