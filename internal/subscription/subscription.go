// Package subscription manages webhook subscriptions: an HTTPS endpoint of
// the workspace's and the event types it wants (docs/decisions/0022-webhooks.md). Every
// operation needs the admin permission.
//
// Each subscription has a signing secret in the Standard Webhooks format,
// `whsec_` and the base64 of 32 random bytes. It is shown once, in the
// answer of the create and of POST …/rotate-secret, and never in a view; it is
// stored sealed with the key ring, bound to the subscription's id, and opened
// only by OpenSecret, for the code that signs deliveries. The endpoint must
// pass the deployment's endpoint policy when it is written (and again when it
// is called, by the sender).
package subscription

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/resource"
)

// EventTypes are the webhook event types a subscription can ask for
// (docs/decisions/0022-webhooks.md), sorted.
var EventTypes = []string{
	"agent.revision_published",
	"environment.deleted",
	"environment.stopped",
	"invitation.accepted",
	"run.accepted",
	"run.cancelled",
	"run.failed",
	"run.started",
	"run.succeeded",
	"run.waiting",
	"skill.revision_published",
	"thread.idle",
}

// SecretPrefix starts every signing secret (Standard Webhooks).
const SecretPrefix = "whsec_"

// secretBytes is the size of a signing secret's random key; Standard Webhooks
// asks for 24 to 64 bytes.
const secretBytes = 32

// Subscription is the view of a subscription; it never holds the secret.
type Subscription struct {
	ID          string
	WorkspaceID string
	URL         string
	// EventTypes are sorted and unique.
	EventTypes  []string
	Enabled     bool
	Description string
	Version     int32
	CreatedByID string
	UpdatedByID string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Endpoint is how the subscription's endpoint has been answering.
	Endpoint EndpointHealth
}

// EndpointHealth is how a subscription's endpoint has been answering: its
// consecutive failed attempts (a delivered attempt resets them) and, once
// they reach outbox.webhook_endpoint_failures, until when the endpoint is
// backed off: no delivery of the subscription is attempted before then
// (docs/decisions/0042-webhook-isolation.md).
type EndpointHealth struct {
	ConsecutiveFailures int32
	PausedUntil         *time.Time
}

// ETag is the subscription's entity tag.
func (s Subscription) ETag() string { return resource.ETag(s.ID, s.Version) }

// WithSecret is a subscription and its new signing secret: the answer of a
// create and of a rotation, the only times the secret is shown.
type WithSecret struct {
	Subscription Subscription
	Secret       string
}

// Page is one page of a list, newest first; NextCursor is nil on the last page.
type Page = resource.Page[Subscription]

// CreateInput is a new subscription.
type CreateInput struct {
	URL         string
	EventTypes  []string
	Description string
	// Enabled defaults to true when nil.
	Enabled *bool
}

// UpdateInput is a PATCH of a subscription: members left out keep their values.
type UpdateInput struct {
	ID          string
	IfMatch     *string
	URL         *string
	EventTypes  []string // nil: keep; replaces the whole set otherwise
	Enabled     *bool
	Description *string
}

// normalizeEventTypes checks a set of event types: not empty, each known, none
// twice. It returns them sorted. Errors name event_types.
func normalizeEventTypes(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, apperr.InvalidField("event_types", "must name at least one event type")
	}
	out := slices.Clone(in)
	slices.Sort(out)
	var details []apperr.Detail
	for i, t := range out {
		switch {
		case !slices.Contains(EventTypes, t):
			details = append(details, apperr.Detail{Field: "event_types", Reason: fmt.Sprintf("%q is not an event type; the event types are %v", t, EventTypes)})
		case i > 0 && out[i-1] == t:
			details = append(details, apperr.Detail{Field: "event_types", Reason: fmt.Sprintf("%q is given more than once", t)})
		}
	}
	if len(details) > 0 {
		return nil, apperr.InvalidArgument("event_types is invalid", details...)
	}
	return out, nil
}

// newSecret returns a fresh signing secret.
func newSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("subscription secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// subscriptionOf maps a row to the view.
func subscriptionOf(r db.Subscription) Subscription {
	types := slices.Clone(r.EventTypes)
	slices.Sort(types)
	return Subscription{
		ID: r.ID, WorkspaceID: r.WorkspaceID, URL: r.Url, EventTypes: types, Enabled: r.Enabled,
		Description: r.Description, Version: r.Version, CreatedByID: r.CreatedByID, UpdatedByID: r.UpdatedByID,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
}
