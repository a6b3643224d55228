package webhook

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/resource"
)

// MaxAttemptsShown bounds the attempts a delivery view lists (the latest).
// A delivery makes at most max_attempts attempts per round; only repeated
// redeliveries make more.
const MaxAttemptsShown = 100

// Statuses of a delivery, as filters accept them.
var Statuses = []string{outbox.StatusPending, outbox.StatusDelivered, outbox.StatusDead, outbox.StatusCancelled}

// Delivery is the view of a webhook delivery.
type Delivery struct {
	ID             string
	SubscriptionID string
	EventType      string
	// Status is pending, delivered, dead or cancelled.
	Status string
	// Attempts counts the attempts of the current round (reset by a
	// redelivery); MaxAttempts is the round's limit.
	Attempts    int32
	MaxAttempts int
	// NextAttemptAt is when a pending delivery is due (for one in flight, the
	// end of its sender's lease); nil once settled.
	NextAttemptAt *time.Time
	LastError     *string
	CreatedAt     time.Time
	SettledAt     *time.Time
	// Payload is the event body POSTed to the endpoint.
	Payload json.RawMessage
	// AttemptLog lists the latest recorded attempts, newest first; only
	// GetDelivery and Redeliver fill it.
	AttemptLog []Attempt
}

// Attempt is one recorded attempt at a delivery.
type Attempt struct {
	// Number counts every attempt at the delivery, across redeliveries.
	Number     int32
	StartedAt  time.Time
	DurationMS int32
	// Result is delivered, failed or cancelled.
	Result     string
	StatusCode *int32
	// Response is a snippet of the endpoint's answer.
	Response *string
	Error    *string
}

// Page is one page of deliveries, newest first.
type Page = resource.Page[Delivery]

// ListInput selects a subscription's deliveries.
type ListInput struct {
	SubscriptionID string
	Status         *string // nil: every status
	Limit          *int
	Cursor         *string
}

// Service lets workspace admins inspect and redeliver the webhook deliveries
// of their workspace. Deliveries of another workspace, and deliveries of
// other kinds, are not found.
type Service struct {
	pool        *pgxpool.Pool
	q           *db.Queries
	maxAttempts int
}

// NewService returns the service over pool; maxAttempts is the webhook
// kind's outbox max_attempts, shown on every delivery.
func NewService(pool *pgxpool.Pool, maxAttempts int) *Service {
	return &Service{pool: pool, q: db.New(), maxAttempts: maxAttempts}
}

// List lists a subscription's deliveries, newest first.
func (s *Service) List(ctx context.Context, c *auth.Caller, in ListInput) (Page, error) {
	if err := auth.Require(c, auth.PermAdmin); err != nil {
		return Page{}, err
	}
	if in.Status != nil && !slices.Contains(Statuses, *in.Status) {
		return Page{}, apperr.InvalidField("status", "must be one of pending, delivered, dead, cancelled")
	}
	after, err := resource.AfterID(in.Cursor)
	if err != nil {
		return Page{}, err
	}
	if _, err := s.q.SubscriptionGet(ctx, s.pool, db.SubscriptionGetParams{WorkspaceID: c.WorkspaceID, ID: in.SubscriptionID}); err != nil {
		return Page{}, dbx.Translate(err, "subscription")
	}
	n := resource.Limit(in.Limit)
	rows, err := s.list(ctx, c.WorkspaceID, in.SubscriptionID, in.Status, after, n)
	if err != nil {
		return Page{}, err
	}
	return resource.PageOf(rows, n, func(r db.Outbox) Delivery { return s.deliveryOf(r, nil) }, func(r db.Outbox) string { return r.ID }), nil
}

// list reads one page of a subscription's deliveries, of one status when
// status is set.
func (s *Service) list(ctx context.Context, workspaceID, subID string, status *string, after string, n int) ([]db.Outbox, error) {
	if status == nil {
		rows, err := s.q.WebhookDeliveryList(ctx, s.pool, db.WebhookDeliveryListParams{
			WorkspaceID: &workspaceID, SubscriptionID: &subID, AfterID: after, PageLimit: resource.Fetch(n),
		})
		return rows, dbx.Translate(err, "delivery")
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) ([]db.Outbox, error) {
		if err := s.q.WebhookDeliveryListPlanCustom(ctx, tx); err != nil {
			return nil, err
		}
		return s.q.WebhookDeliveryListByStatus(ctx, tx, db.WebhookDeliveryListByStatusParams{
			WorkspaceID: &workspaceID, SubscriptionID: &subID, AfterID: after, Status: *status, PageLimit: resource.Fetch(n),
		})
	})
}

// Get reads a delivery with its latest attempts.
func (s *Service) Get(ctx context.Context, c *auth.Caller, deliveryID string) (Delivery, error) {
	if err := auth.Require(c, auth.PermAdmin); err != nil {
		return Delivery{}, err
	}
	row, err := s.q.WebhookDeliveryGet(ctx, s.pool, db.WebhookDeliveryGetParams{WorkspaceID: &c.WorkspaceID, ID: deliveryID})
	if err != nil {
		return Delivery{}, dbx.Translate(err, "delivery")
	}
	return s.withAttempts(ctx, s.pool, row)
}

// Redeliver sends a settled delivery again: it is put back to pending in
// place, due now, as a new round of attempts (attempts 0; attempt numbers go
// on). It keeps its id, so the endpoint sees the same webhook-id, with a new
// timestamp and signature. A pending delivery is 409 conflict (it will be
// sent anyway); one whose subscription is disabled is 409 disabled (it
// would only be cancelled). The change is audited as delivery.redelivered,
// and the outbox senders are notified at commit, so the redelivery is
// attempted at once, not at the engine's next scan.
func (s *Service) Redeliver(ctx context.Context, c *auth.Caller, deliveryID string) (Delivery, error) {
	if err := auth.Require(c, auth.PermAdmin); err != nil {
		return Delivery{}, err
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Delivery, error) {
		row, err := s.q.WebhookDeliveryGetForUpdate(ctx, tx, db.WebhookDeliveryGetForUpdateParams{WorkspaceID: &c.WorkspaceID, ID: deliveryID})
		if err != nil {
			return Delivery{}, dbx.Translate(err, "delivery")
		}
		if row.Status == outbox.StatusPending {
			return Delivery{}, apperr.New(apperr.KindConflict, "the delivery is pending: it will be attempted without a redelivery")
		}
		sub, err := s.q.SubscriptionGet(ctx, tx, db.SubscriptionGetParams{WorkspaceID: c.WorkspaceID, ID: deref(row.SubscriptionID)})
		if err != nil {
			return Delivery{}, dbx.Translate(err, "subscription")
		}
		if !sub.Enabled {
			return Delivery{}, apperr.New(apperr.KindDisabled, "the delivery's subscription is disabled; enable it before redelivering")
		}
		if row, err = s.q.WebhookDeliveryRedeliver(ctx, tx, row.ID); err != nil {
			return Delivery{}, err
		}
		// The senders wake at commit and attempt it at once.
		if err := outbox.Notify(ctx, tx, row.Kind); err != nil {
			return Delivery{}, err
		}
		err = audit.Record(ctx, tx, audit.Event{
			OrganizationID: c.OrganizationID, WorkspaceID: c.WorkspaceID, ActorID: c.PrincipalID,
			Action: "delivery.redelivered", SubjectType: "delivery", SubjectID: row.ID,
			ChangedFields: []string{"attempts", "next_attempt_at", "settled_at", "status"},
		})
		if err != nil {
			return Delivery{}, err
		}
		return s.withAttempts(ctx, tx, row)
	})
}

// withAttempts maps row with its latest attempts, read in q.
func (s *Service) withAttempts(ctx context.Context, q db.DBTX, row db.Outbox) (Delivery, error) {
	rows, err := s.q.WebhookDeliveryAttempts(ctx, q, db.WebhookDeliveryAttemptsParams{DeliveryID: row.ID, MaxAttempts: MaxAttemptsShown})
	if err != nil {
		return Delivery{}, dbx.Translate(err, "delivery attempt")
	}
	log := make([]Attempt, 0, len(rows))
	for _, a := range rows {
		log = append(log, Attempt{
			Number: a.Number, StartedAt: a.StartedAt.UTC(), DurationMS: a.DurationMs, Result: a.Result,
			StatusCode: a.StatusCode, Response: a.Response, Error: a.Error,
		})
	}
	return s.deliveryOf(row, log), nil
}

// deliveryOf maps a row to the view.
func (s *Service) deliveryOf(r db.Outbox, log []Attempt) Delivery {
	d := Delivery{
		ID: r.ID, SubscriptionID: deref(r.SubscriptionID), EventType: deref(r.EventType), Status: r.Status,
		Attempts: r.Attempts, MaxAttempts: s.maxAttempts, LastError: r.LastError, CreatedAt: r.CreatedAt.UTC(),
		SettledAt: utc(r.SettledAt), Payload: r.Payload, AttemptLog: log,
	}
	if r.Status == outbox.StatusPending {
		next := r.NextAttemptAt.UTC()
		d.NextAttemptAt = &next
	}
	return d
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
