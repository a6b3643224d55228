package outbox

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/dbx"
)

// isolation is how a kind's deliveries are kept from holding each other up
// (docs/decisions/0042-webhook-isolation.md). Only webhooks have targets of
// their own (subscriptions) and so isolation; the zero value, for the other
// kinds, claims the oldest due rows and keeps each attempt in its slot.
type isolation struct {
	// inFlight bounds the leased deliveries of one subscription; 0 claims
	// with OutboxClaim, without bound.
	inFlight int
	// slowAfter is how long an attempt runs before it gives its parallel
	// slot to the next row, when one of slowMax slow places is free; 0
	// keeps every attempt in its slot.
	slowAfter time.Duration
	slowMax   int
}

// isolationOf returns the isolation of kind under cfg.
func isolationOf(cfg config.Outbox, kind string) isolation {
	if kind != KindWebhook {
		return isolation{}
	}
	iso := isolation{inFlight: cfg.WebhookInFlightPerSubscription, slowMax: cfg.WebhookSlowAttempts}
	if iso.slowMax > 0 {
		iso.slowAfter = time.Duration(cfg.WebhookSlowAttemptMS) * time.Millisecond
	}
	return iso
}

// claim leases up to batch due rows of kind.
func (e *Engine) claim(ctx context.Context, kind string, p config.OutboxPolicy, iso isolation) ([]db.OutboxClaimRow, error) {
	if iso.inFlight == 0 {
		return e.q.OutboxClaim(ctx, e.pool, db.OutboxClaimParams{Kind: kind, Batch: int32(p.Batch), LeaseSeconds: float64(p.LeaseSeconds)})
	}
	return e.claimPerSubscription(ctx, p, iso)
}

// claimPerSubscription leases due webhook deliveries in turns across
// workspaces and subscriptions, at most iso.inFlight leased per subscription
// on every replica together. The candidates are locked first and the rows
// counted and claimed by a second statement, whose snapshot is taken after
// the locks: it sees every claim another sender committed for those
// subscriptions, so the bound holds across replicas.
func (e *Engine) claimPerSubscription(ctx context.Context, p config.OutboxPolicy, iso isolation) ([]db.OutboxClaimRow, error) {
	return dbx.WithTxV(ctx, e.pool, func(ctx context.Context, tx pgx.Tx) ([]db.OutboxClaimRow, error) {
		subs, err := e.q.OutboxWebhookCandidates(ctx, tx, db.OutboxWebhookCandidatesParams{InFlight: int32(iso.inFlight), Batch: int32(p.Batch)})
		if err != nil || len(subs) == 0 {
			return nil, err
		}
		rows, err := e.q.OutboxWebhookClaim(ctx, tx, db.OutboxWebhookClaimParams{
			SubscriptionIds: subs, InFlight: int32(iso.inFlight), Batch: int32(p.Batch), LeaseSeconds: float64(p.LeaseSeconds),
		})
		if err != nil {
			return nil, err
		}
		slices.SortStableFunc(rows, func(a, b db.OutboxWebhookClaimRow) int { return cmp.Compare(a.Turn, b.Turn) })
		out := make([]db.OutboxClaimRow, len(rows))
		for i, r := range rows {
			out[i] = db.OutboxClaimRow{
				ID: r.ID, Kind: r.Kind, WorkspaceID: r.WorkspaceID, SubscriptionID: r.SubscriptionID, EventType: r.EventType,
				Payload: r.Payload, Sealed: r.Sealed, Attempts: r.Attempts, AttemptNumber: r.AttemptNumber,
				CreatedAt: r.CreatedAt, ClaimedAt: r.ClaimedAt,
			}
		}
		return out, nil
	})
}

// lane is where an attempt runs: one of the kind's parallel slots, or a slow
// place.
type lane int

const (
	inSlot lane = iota
	inSlow
)

// lanes are the places one pass runs its attempts in: parallel slots, and
// slow places for attempts that run long. A slot is for a target's
// (subscription's) first running attempt: its other attempts, which exist
// only when it is given more than one in flight, start in a slow place when
// one is free, so that a slow endpoint takes at most one slot, and that only
// for slowAfter.
type lanes struct {
	slots     chan struct{}
	slow      chan struct{}
	slowAfter time.Duration

	mu      sync.Mutex
	running map[string]int // running attempts, by target
}

func newLanes(parallel int, iso isolation) *lanes {
	return &lanes{
		slots: make(chan struct{}, parallel), slow: make(chan struct{}, iso.slowMax), slowAfter: iso.slowAfter,
		running: map[string]int{},
	}
}

// enter takes a place for an attempt at target: a slow place when target
// has a running attempt already and one is free, else a slot, waiting for
// one. It reports false when ctx ended first.
func (l *lanes) enter(ctx context.Context, target string) (lane, bool) {
	if l.slowAfter > 0 && target != "" && l.count(target, 1) > 1 {
		select {
		case l.slow <- struct{}{}:
			return inSlow, true
		default:
		}
	}
	select {
	case l.slots <- struct{}{}:
		return inSlot, true
	case <-ctx.Done():
		l.count(target, -1)
		return inSlot, false
	}
}

// moveSlow moves a running attempt from its slot to a slow place, when one
// is free.
func (l *lanes) moveSlow() bool {
	select {
	case l.slow <- struct{}{}:
		<-l.slots
		return true
	default:
		return false
	}
}

// leave frees the place of a finished attempt at target.
func (l *lanes) leave(in lane, target string) {
	l.count(target, -1)
	if in == inSlot {
		<-l.slots
		return
	}
	<-l.slow
}

// count adds n to target's running attempts and returns the sum; targets
// are counted only when slow places are in use.
func (l *lanes) count(target string, n int) int {
	if l.slowAfter <= 0 || target == "" {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	sum := l.running[target] + n
	if sum <= 0 {
		delete(l.running, target)
	} else {
		l.running[target] = sum
	}
	return sum
}
