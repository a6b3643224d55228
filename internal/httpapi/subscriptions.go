package httpapi

import (
	"context"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/subscription"
	"github.com/svcdev/svc/internal/timestamp"
)

// SubscriptionHandlers implements /api/v1/subscriptions.
type SubscriptionHandlers struct {
	svc *subscription.Service
}

// ListSubscriptions lists the subscriptions of the key's workspace.
func (h *SubscriptionHandlers) ListSubscriptions(ctx context.Context, req api.ListSubscriptionsRequestObject) (api.ListSubscriptionsResponseObject, error) {
	p, err := h.svc.List(ctx, auth.CallerFrom(ctx), req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	return api.ListSubscriptions200JSONResponse{Items: mapAll(p.Items, toAPISubscription), NextCursor: nullableString(p.NextCursor)}, nil
}

// CreateSubscription creates a subscription; the answer carries its secret.
func (h *SubscriptionHandlers) CreateSubscription(ctx context.Context, req api.CreateSubscriptionRequestObject) (api.CreateSubscriptionResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	in := subscription.CreateInput{URL: b.Url, EventTypes: eventTypes(b.EventTypes), Enabled: b.Enabled}
	if b.Description != nil {
		in.Description = *b.Description
	}
	s, err := h.svc.Create(ctx, auth.CallerFrom(ctx), in)
	if err != nil {
		return nil, err
	}
	etag, loc := s.Subscription.ETag(), "/api/v1/subscriptions/"+s.Subscription.ID
	return api.CreateSubscription201JSONResponse{Body: toAPIWithSecret(s), Headers: api.CreateSubscription201ResponseHeaders{ETag: &etag, Location: &loc}}, nil
}

// GetSubscription reads a subscription.
func (h *SubscriptionHandlers) GetSubscription(ctx context.Context, req api.GetSubscriptionRequestObject) (api.GetSubscriptionResponseObject, error) {
	s, err := h.svc.Get(ctx, auth.CallerFrom(ctx), req.SubscriptionId)
	if err != nil {
		return nil, err
	}
	etag := s.ETag()
	return api.GetSubscription200JSONResponse{Body: toAPISubscription(s), Headers: api.GetSubscription200ResponseHeaders{ETag: &etag}}, nil
}

// UpdateSubscription changes a subscription.
func (h *SubscriptionHandlers) UpdateSubscription(ctx context.Context, req api.UpdateSubscriptionRequestObject) (api.UpdateSubscriptionResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	in := subscription.UpdateInput{
		ID: req.SubscriptionId, IfMatch: &req.Params.IfMatch, URL: b.Url, Enabled: b.Enabled, Description: b.Description,
	}
	if b.EventTypes != nil {
		in.EventTypes = eventTypes(*b.EventTypes)
	}
	s, err := h.svc.Update(ctx, auth.CallerFrom(ctx), in)
	if err != nil {
		return nil, err
	}
	etag := s.ETag()
	return api.UpdateSubscription200JSONResponse{Body: toAPISubscription(s), Headers: api.UpdateSubscription200ResponseHeaders{ETag: &etag}}, nil
}

// DeleteSubscription deletes a subscription.
func (h *SubscriptionHandlers) DeleteSubscription(ctx context.Context, req api.DeleteSubscriptionRequestObject) (api.DeleteSubscriptionResponseObject, error) {
	if err := h.svc.Delete(ctx, auth.CallerFrom(ctx), req.SubscriptionId, &req.Params.IfMatch); err != nil {
		return nil, err
	}
	return api.DeleteSubscription204Response{}, nil
}

// RotateSubscriptionSecret replaces a subscription's signing secret.
func (h *SubscriptionHandlers) RotateSubscriptionSecret(ctx context.Context, req api.RotateSubscriptionSecretRequestObject) (api.RotateSubscriptionSecretResponseObject, error) {
	s, err := h.svc.RotateSecret(ctx, auth.CallerFrom(ctx), req.SubscriptionId, &req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	etag := s.Subscription.ETag()
	return api.RotateSubscriptionSecret200JSONResponse{Body: toAPIWithSecret(s), Headers: api.RotateSubscriptionSecret200ResponseHeaders{ETag: &etag}}, nil
}

// eventTypes maps the contract's event types (an enum the validator checked)
// to strings; a non-nil empty list stays non-nil, so the service can refuse it.
func eventTypes(in []api.WebhookEventType) []string {
	out := make([]string, 0, len(in))
	for _, t := range in {
		out = append(out, string(t))
	}
	return out
}

func toAPIWithSecret(s subscription.WithSecret) api.SubscriptionWithSecret {
	return api.SubscriptionWithSecret{Subscription: toAPISubscription(s.Subscription), Secret: s.Secret}
}

func toAPISubscription(s subscription.Subscription) api.Subscription {
	types := make([]api.WebhookEventType, 0, len(s.EventTypes))
	for _, t := range s.EventTypes {
		types = append(types, api.WebhookEventType(t))
	}
	return api.Subscription{
		Id: s.ID, Url: s.URL, EventTypes: types, Enabled: s.Enabled, Description: s.Description,
		Version: int(s.Version), CreatedById: s.CreatedByID, UpdatedById: s.UpdatedByID,
		CreatedAt: timestamp.Of(s.CreatedAt), UpdatedAt: timestamp.Of(s.UpdatedAt),
		Endpoint: api.SubscriptionEndpoint{
			ConsecutiveFailures: int(s.Endpoint.ConsecutiveFailures),
			PausedUntil:         nullableTime(s.Endpoint.PausedUntil),
		},
	}
}
