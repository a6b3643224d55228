// Package outbox is the transactional outbox: deliveries are written in the same
// transaction as the change that causes them, and delivered at least once by the
// engine's deliver_outbox passes, which hand each claimed delivery to its kind's
// Deliverer. Engine.Run drives the passes on every control replica, woken by
// the commits that enqueue (see engine.go, run.go,
// docs/decisions/0021-outbox-engine.md and
// docs/decisions/0049-outbox-loop-and-listener.md).
package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/id"
)

// Kinds of deliveries.
const (
	KindWebhook              = "webhook"
	KindIdentityMail         = "identity_mail"
	KindSubagentResult       = "subagent_result"
	KindMemoryNamespacePurge = "memory_namespace_purge"
	KindCheckpointCleanup    = "checkpoint_cleanup"
)

// Kinds lists every kind, in a fixed order.
var Kinds = []string{KindWebhook, KindIdentityMail, KindSubagentResult, KindMemoryNamespacePurge, KindCheckpointCleanup}

// Statuses of a delivery.
const (
	StatusPending   = "pending"
	StatusDelivered = "delivered"
	StatusDead      = "dead"
	// StatusCancelled settles a delivery that must not be sent, such as one to a
	// disabled subscription. It is not an alert condition.
	StatusCancelled = "cancelled"
)

// Delivery is a delivery to enqueue.
type Delivery struct {
	Kind        string
	WorkspaceID string
	Payload     any
	// Sealed holds the delivery's secrets (a mailed token, say), sealed with the
	// key ring; the payload itself is stored in clear.
	Sealed []byte
	// SubscriptionID and EventType name a webhook delivery's target and event;
	// both are required for KindWebhook and absent for every other kind.
	SubscriptionID string
	EventType      string
}

// Enqueue writes d in tx and returns its id.
func Enqueue(ctx context.Context, tx db.DBTX, d Delivery) (string, error) {
	payload, err := json.Marshal(d.Payload)
	if err != nil {
		return "", fmt.Errorf("encode %s delivery: %w", d.Kind, err)
	}
	dlv := id.New(id.Delivery)
	if err := db.New().OutboxInsert(ctx, tx, db.OutboxInsertParams{
		ID: dlv, Kind: d.Kind, WorkspaceID: optional(d.WorkspaceID), Payload: payload, Sealed: d.Sealed,
		SubscriptionID: optional(d.SubscriptionID), EventType: optional(d.EventType),
	}); err != nil {
		return "", fmt.Errorf("enqueue %s delivery: %w", d.Kind, err)
	}
	return dlv, nil
}

// Notify wakes the senders of every replica, when tx commits, for a delivery
// of kind that tx made due again (a redelivery): it is attempted at once
// rather than at the engine's next scan. Enqueue notifies by itself.
func Notify(ctx context.Context, tx db.DBTX, kind string) error {
	if err := db.New().OutboxNotify(ctx, tx, kind); err != nil {
		return fmt.Errorf("notify the %s senders: %w", kind, err)
	}
	return nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Claimed is one delivery a sender holds the lease of.
type Claimed struct {
	ID             string
	Kind           string
	WorkspaceID    string // empty for deliveries outside a workspace
	SubscriptionID string // webhook deliveries only
	EventType      string // webhook deliveries only
	Payload        json.RawMessage
	Sealed         []byte
	// Attempt is this attempt's number within the current round, from 1; the
	// delivery is dead when an attempt numbered max_attempts fails.
	Attempt int
	// CreatedAt is when the delivery was enqueued; ClaimedAt is the database's
	// time of this claim, a fresh timestamp for signing.
	CreatedAt time.Time
	ClaimedAt time.Time
}

// A Deliverer makes one attempt at a delivery of its kind. It must return when
// ctx ends (the sender is stopping or the attempt's time is up); the engine
// then gives the attempt back rather than charging it.
type Deliverer interface {
	Deliver(ctx context.Context, d Claimed) Outcome
}

// DelivererFunc adapts a function to Deliverer.
type DelivererFunc func(ctx context.Context, d Claimed) Outcome

// Deliver calls f.
func (f DelivererFunc) Deliver(ctx context.Context, d Claimed) Outcome { return f(ctx, d) }

// Outcome is what one attempt came to. Build it with Delivered, Failed,
// Permanent or Cancelled, then set StatusCode and Response where they apply.
type Outcome struct {
	// Err is nil when the delivery succeeded (or was cancelled).
	Err error
	// Permanent marks a failure no retry can mend: the delivery is dead at once.
	Permanent bool
	// Cancel settles the delivery as cancelled, with Reason.
	Cancel bool
	Reason string
	// StatusCode is the HTTP status the receiver answered, 0 when none.
	StatusCode int
	// Response is a short snippet of the receiver's answer, kept on the attempt
	// for inspection. The engine truncates it to ResponseSnippetBytes.
	Response string
}

// ResponseSnippetBytes bounds the response snippet kept on an attempt.
const ResponseSnippetBytes = 1024

// Delivered is the outcome of a successful attempt.
func Delivered() Outcome { return Outcome{} }

// Failed is the outcome of an attempt worth retrying.
func Failed(err error) Outcome { return Outcome{Err: err} }

// Permanent is the outcome of an attempt that no retry can mend.
func Permanent(err error) Outcome { return Outcome{Err: err, Permanent: true} }

// Cancelled settles the delivery without sending it, for reason.
func Cancelled(reason string) Outcome { return Outcome{Cancel: true, Reason: reason} }
