package outbox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"

	"github.com/svcdev/svc/internal/pglisten"
)

// notifyChannel is the PostgreSQL channel Enqueue notifies at commit.
const notifyChannel = "svc_outbox"

// The names of Run's passes, which the logs and the sweeps' metrics
// (svc_sweep_passes_total, svc_sweep_duration_seconds) use.
const (
	DeliverPass = "deliver_outbox"
	ObservePass = "observe_outbox"
)

// Pass is one pass Run made: its name (DeliverPass or ObservePass), how long
// it took and what it failed with.
type Pass struct {
	Name string
	Took time.Duration
	Err  error
}

// Run drives this replica's share of the outbox until ctx ends. It listens
// for commits that enqueued deliveries (NOTIFY svc_outbox, package pglisten)
// and makes a deliver_outbox pass (Deliver) as soon as one is heard, and at
// the latest Scan after the last pass, so lost notifications only delay
// deliveries. Beside it, an observe_outbox pass sets the gauges every Scan.
// Every control replica runs it at once: the deliveries' leases keep them
// apart, and each replica serves the gauges. When ctx ends it stops claiming,
// lets the attempts under way be settled or given back, and returns nil.
func (e *Engine) Run(ctx context.Context) error {
	if e.Scan <= 0 {
		return fmt.Errorf("outbox engine: scan interval %s is not positive", e.Scan)
	}
	listener := pglisten.New(e.pool, pglisten.Config{
		Channels:   []string{notifyChannel},
		NotifyFunc: func(string, string) { e.Wake() },
		// Deliveries may have been enqueued while nobody listened.
		ListenFunc: e.Wake,
		Subject:    "outbox",
	}, e.log)
	var wg sync.WaitGroup
	wg.Go(func() { listener.Run(ctx) })
	wg.Go(func() {
		e.every(ctx, ObservePass, nil, func(ctx context.Context) error {
			_, err := Observe(ctx, e.pool, e.cfg, e.metrics)
			return err
		})
	})
	e.every(ctx, DeliverPass, e.wake, e.Deliver)
	wg.Wait()
	return nil
}

// Hold stops Run's passes for good; Deliver and Observe still work when
// called. Tests use it to keep the outbox still.
func (e *Engine) Hold() { e.held.Store(true) }

// every makes a pass after a random part of Scan, so that replicas started
// together do not pass in step, then Scan after each pass, or as soon as
// wake is signalled, until ctx ends. A pass that fails or panics is logged
// and the next one comes as usual.
func (e *Engine) every(ctx context.Context, name string, wake <-chan struct{}, pass func(context.Context) error) {
	timer := time.NewTimer(rand.N(e.Scan))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-wake:
			timer.Stop() // a stopped timer's channel never delivers a stale tick
		}
		if !e.held.Load() {
			start := time.Now()
			err := guarded(ctx, pass)
			if err != nil && ctx.Err() == nil {
				e.log.Error("sweep pass failed; retrying next interval", "sweep", name, "error", err.Error())
			}
			if e.PassFunc != nil {
				e.PassFunc(Pass{Name: name, Took: time.Since(start), Err: err})
			}
		}
		timer.Reset(e.Scan)
	}
}

// guarded turns a panicking pass into a failed one, so one bad pass does not
// stop the outbox for good.
func guarded(ctx context.Context, pass func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return pass(ctx)
}
