package httpapi

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/timestamp"
	"github.com/svcdev/svc/internal/webhook"
)

// DeliveryHandlers implements the webhook delivery inspection and
// redelivery operations.
type DeliveryHandlers struct {
	svc *webhook.Service
}

// ListSubscriptionDeliveries lists a subscription's deliveries.
func (h *DeliveryHandlers) ListSubscriptionDeliveries(ctx context.Context, req api.ListSubscriptionDeliveriesRequestObject) (api.ListSubscriptionDeliveriesResponseObject, error) {
	in := webhook.ListInput{SubscriptionID: req.SubscriptionId, Limit: req.Params.Limit, Cursor: req.Params.Cursor}
	if req.Params.Status != nil {
		status := string(*req.Params.Status)
		in.Status = &status
	}
	p, err := h.svc.List(ctx, auth.CallerFrom(ctx), in)
	if err != nil {
		return nil, err
	}
	items := make([]api.WebhookDelivery, 0, len(p.Items))
	for _, d := range p.Items {
		v, err := toAPIDelivery(d)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
	return api.ListSubscriptionDeliveries200JSONResponse{Items: items, NextCursor: nullableString(p.NextCursor)}, nil
}

// GetDelivery reads a delivery with its attempts.
func (h *DeliveryHandlers) GetDelivery(ctx context.Context, req api.GetDeliveryRequestObject) (api.GetDeliveryResponseObject, error) {
	d, err := h.svc.Get(ctx, auth.CallerFrom(ctx), req.DeliveryId)
	if err != nil {
		return nil, err
	}
	v, err := toAPIDeliveryDetail(d)
	if err != nil {
		return nil, err
	}
	return api.GetDelivery200JSONResponse(v), nil
}

// RedeliverDelivery sends a settled delivery again.
func (h *DeliveryHandlers) RedeliverDelivery(ctx context.Context, req api.RedeliverDeliveryRequestObject) (api.RedeliverDeliveryResponseObject, error) {
	d, err := h.svc.Redeliver(ctx, auth.CallerFrom(ctx), req.DeliveryId)
	if err != nil {
		return nil, err
	}
	v, err := toAPIDeliveryDetail(d)
	if err != nil {
		return nil, err
	}
	return api.RedeliverDelivery202JSONResponse(v), nil
}

func toAPIDelivery(d webhook.Delivery) (api.WebhookDelivery, error) {
	var payload api.WebhookEvent
	if err := json.Unmarshal(d.Payload, &payload); err != nil {
		return api.WebhookDelivery{}, fmt.Errorf("delivery %s: stored payload: %w", d.ID, err)
	}
	return api.WebhookDelivery{
		Id: d.ID, SubscriptionId: d.SubscriptionID, EventType: api.WebhookEventType(d.EventType),
		Status: api.WebhookDeliveryStatus(d.Status), AttemptsUsed: int(d.Attempts), MaxAttempts: d.MaxAttempts,
		NextAttemptAt: nullableTime(d.NextAttemptAt), LastError: nullableString(d.LastError),
		CreatedAt: timestamp.Of(d.CreatedAt), SettledAt: nullableTime(d.SettledAt), Payload: payload,
	}, nil
}

func toAPIDeliveryDetail(d webhook.Delivery) (api.WebhookDeliveryDetail, error) {
	v, err := toAPIDelivery(d)
	if err != nil {
		return api.WebhookDeliveryDetail{}, err
	}
	attempts := make([]api.WebhookDeliveryAttempt, 0, len(d.AttemptLog))
	for _, a := range d.AttemptLog {
		attempts = append(attempts, api.WebhookDeliveryAttempt{
			Number: int(a.Number), StartedAt: timestamp.Of(a.StartedAt), DurationMs: int(a.DurationMS),
			Result: api.WebhookDeliveryAttemptResult(a.Result), StatusCode: nullableInt32(a.StatusCode),
			Response: nullableString(a.Response), Error: nullableString(a.Error),
		})
	}
	return api.WebhookDeliveryDetail{
		Id: v.Id, SubscriptionId: v.SubscriptionId, EventType: v.EventType, Status: v.Status,
		AttemptsUsed: v.AttemptsUsed, MaxAttempts: v.MaxAttempts, NextAttemptAt: v.NextAttemptAt,
		LastError: v.LastError, CreatedAt: v.CreatedAt, SettledAt: v.SettledAt, Payload: v.Payload,
		Attempts: attempts,
	}, nil
}
