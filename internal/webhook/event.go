package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/timestamp"
)

// Event types (docs/decisions/0022-webhooks.md), named noun.verb. Run, thread and
// environment events are emitted by the code that runs them.
const (
	RunAccepted            = "run.accepted"
	RunStarted             = "run.started"
	RunSucceeded           = "run.succeeded"
	RunFailed              = "run.failed"
	RunCancelled           = "run.cancelled"
	RunWaiting             = "run.waiting"
	ThreadIdle             = "thread.idle"
	AgentRevisionPublished = "agent.revision_published"
	SkillRevisionPublished = "skill.revision_published"
	InvitationAccepted     = "invitation.accepted"
	EnvironmentStopped     = "environment.stopped"
	EnvironmentDeleted     = "environment.deleted"
)

// EventTypes lists every event type, sorted; subscription.EventTypes is the
// same list (a test keeps them equal).
var EventTypes = []string{
	AgentRevisionPublished,
	EnvironmentDeleted,
	EnvironmentStopped,
	InvitationAccepted,
	RunAccepted,
	RunCancelled,
	RunFailed,
	RunStarted,
	RunSucceeded,
	RunWaiting,
	SkillRevisionPublished,
	ThreadIdle,
}

// Event is something that happened in a workspace, for its subscribers.
type Event struct {
	// Type is one of EventTypes.
	Type string
	// Time is when it happened (the change's own time stamp, where it has
	// one); zero means now.
	Time time.Time
	// Data is the event's JSON object: compact, ids first, never a secret.
	Data any
}

// Body is the JSON body of a delivery: the event as POSTed to subscribers.
type Body struct {
	Type string `json:"type"`
	// Timestamp is the event's time, RFC 3339 in UTC with six fractional
	// digits (timestamp.Format).
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// Emit writes, in tx (the transaction of the change e reports), one webhook
// delivery of e per enabled subscription of the workspace whose event types
// include e's type. It locks those subscriptions FOR KEY SHARE until tx ends,
// so none is deleted under the deliveries it writes. Nothing is written when
// no subscription wants the event; nothing survives a rollback of tx.
func Emit(ctx context.Context, tx db.DBTX, workspaceID string, e Event) error {
	if !slices.Contains(EventTypes, e.Type) {
		return fmt.Errorf("emit webhook event: %q is not an event type", e.Type)
	}
	subs, err := db.New().WebhookSubscriptionsForEvent(ctx, tx, db.WebhookSubscriptionsForEventParams{WorkspaceID: workspaceID, EventType: e.Type})
	if err != nil {
		return fmt.Errorf("find subscriptions for %s: %w", e.Type, err)
	}
	if len(subs) == 0 {
		return nil
	}
	body, err := encodeBody(e)
	if err != nil {
		return err
	}
	for _, sub := range subs {
		if _, err := outbox.Enqueue(ctx, tx, outbox.Delivery{
			Kind: outbox.KindWebhook, WorkspaceID: workspaceID, Payload: body, SubscriptionID: sub, EventType: e.Type,
		}); err != nil {
			return err
		}
	}
	return nil
}

// encodeBody encodes e's delivery body once for all its subscriptions.
func encodeBody(e Event) (json.RawMessage, error) {
	data, err := json.Marshal(e.Data)
	if err != nil {
		return nil, fmt.Errorf("encode %s data: %w", e.Type, err)
	}
	if len(data) == 0 || data[0] != '{' {
		return nil, fmt.Errorf("encode %s data: not a JSON object", e.Type)
	}
	at := e.Time
	if at.IsZero() {
		at = time.Now()
	}
	raw, err := json.Marshal(Body{Type: e.Type, Timestamp: timestamp.Format(at), Data: data})
	if err != nil {
		return nil, fmt.Errorf("encode %s body: %w", e.Type, err)
	}
	return raw, nil
}
