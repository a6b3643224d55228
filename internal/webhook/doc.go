// Package webhook is everything about webhooks except the outbox engine that
// schedules them (docs/decisions/0022-webhooks.md):
//
//   - Events. Emit, called inside the transaction of the change an event
//     reports, writes one outbox delivery (kind webhook) per enabled
//     subscription of the workspace that asked for the event's type. The
//     delivery's payload is the event body, `{"type", "timestamp", "data"}`,
//     exactly what is POSTed. A rolled-back change leaves no delivery.
//   - Signing, per Standard Webhooks: `webhook-id` is the delivery id, the
//     same on every attempt and after an admin redelivery, so receivers can
//     deduplicate; `webhook-timestamp` is the attempt's time (unix seconds);
//     `webhook-signature` is `v1,` and the base64 HMAC-SHA256, keyed with the
//     decoded subscription secret, of `{id}.{timestamp}.{body}`.
//   - The Deliverer, the outbox.Deliverer of kind webhook: it reads the
//     subscription as it is now (deleted or disabled: the delivery is
//     cancelled), signs, and POSTs through the endpoint policy's guarded
//     client without following redirects. 2xx is delivered; 410 Gone disables
//     the subscription and kills the delivery; anything else is retried.
//   - Service: delivery inspection and redelivery for workspace admins.
package webhook
