package testfactory

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/id"
)

// DeliveryOpts describes an outbox delivery in any state: the row a change
// would have enqueued, or the one the engine would have left after its
// attempts.
type DeliveryOpts struct {
	ID string // default: a new delivery id
	// Kind defaults to "webhook" when SubscriptionID is set; it is required
	// otherwise.
	Kind        string
	WorkspaceID string          // default: none
	Payload     json.RawMessage // default: {}
	Sealed      []byte          // stored as given
	// SubscriptionID and EventType name a webhook delivery's target;
	// EventType defaults to "run.succeeded".
	SubscriptionID string
	EventType      string
	// Status defaults to "pending"; any other is settled SettledAgo before
	// the database's clock time.
	Status     string
	SettledAgo time.Duration
	// Attempts is both the attempts of the current round and the attempt
	// number.
	Attempts int32
}

// Delivery writes an outbox delivery and returns its id. It does not wake the engine's
// senders (outbox.Enqueue does): they find a pending one at their next poll.
func Delivery(tb testing.TB, q db.DBTX, o *DeliveryOpts) string {
	tb.Helper()
	if o == nil {
		o = &DeliveryOpts{}
	}
	kind := o.Kind
	var sub, event *string
	if o.SubscriptionID != "" {
		kind = or(kind, "webhook")
		sub, event = &o.SubscriptionID, ptr(or(o.EventType, "run.succeeded"))
	}
	if kind == "" {
		tb.Fatalf("testfactory: a delivery needs a Kind or a SubscriptionID")
	}
	var ws *string
	if o.WorkspaceID != "" {
		ws = &o.WorkspaceID
	}
	status := or(o.Status, "pending")
	dlvID := or(o.ID, id.New(id.Delivery))
	// No query writes a delivery in a chosen state: the engine moves them.
	_, err := q.Exec(context.Background(), `INSERT INTO outbox (id, kind, workspace_id, payload, sealed, subscription_id, event_type,
		status, attempts, attempt_number, settled_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, CASE WHEN $8 <> 'pending' THEN now() - make_interval(secs => $10) END)`,
		dlvID, kind, ws, orJSON(o.Payload), o.Sealed, sub, event, status, o.Attempts, o.SettledAgo.Seconds())
	if err != nil {
		tb.Fatalf("testfactory: delivery: %v", err)
	}
	return dlvID
}

// DeliveryAttemptOpts describes one recorded attempt of a delivery.
type DeliveryAttemptOpts struct {
	DeliveryID string // required
	Number     int32  // required: the attempt number it records
	Result     string // default: "delivered"
	StatusCode int32  // 0: none (the request got no answer)
	Response   string
	Error      string
	// StartedAt is when it started; when zero, StartedAgo before the
	// database's clock time. It lasted Duration (default 5 ms).
	StartedAt  time.Time
	StartedAgo time.Duration
	Duration   time.Duration
}

// DeliveryAttempt records an attempt of a delivery, as the engine does when
// it settles one.
func DeliveryAttempt(tb testing.TB, q db.DBTX, o *DeliveryAttemptOpts) {
	tb.Helper()
	if o == nil || o.DeliveryID == "" || o.Number == 0 {
		tb.Fatalf("testfactory: a delivery attempt needs a DeliveryID and a Number")
	}
	dur := o.Duration
	if dur == 0 {
		dur = 5 * time.Millisecond
	}
	var started *time.Time
	if !o.StartedAt.IsZero() {
		started = &o.StartedAt
	}
	_, err := q.Exec(context.Background(), `INSERT INTO outbox_attempt (delivery_id, number, replica, started_at, duration_ms,
		result, status_code, response, error)
		VALUES ($1, $2, 'test', coalesce($3, now() - make_interval(secs => $4)), $5, $6, NULLIF($7, 0), NULLIF($8, ''), NULLIF($9, ''))`,
		o.DeliveryID, o.Number, started, o.StartedAgo.Seconds(), dur.Milliseconds(), or(o.Result, "delivered"), o.StatusCode, o.Response, o.Error)
	if err != nil {
		tb.Fatalf("testfactory: delivery attempt: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
