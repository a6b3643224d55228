-- +goose Up
-- Webhook delivery isolation (docs/decisions/0042-webhook-isolation.md): the
-- webhook claim walks the subscriptions that have pending deliveries, bounds
-- the attempts each has in flight and skips those whose endpoint is backed off.
--
-- The pending deliveries of each subscription, due first: the claim skips
-- from one subscription to the next on it and takes each one's due rows.
CREATE INDEX outbox_subscription_pending_idx ON outbox (subscription_id, next_attempt_at)
    WHERE status = 'pending' AND subscription_id IS NOT NULL;
-- The leased deliveries of each subscription: an attempt is in flight while its
-- lease has not ended. Settling clears lease_until, so this index stays small.
CREATE INDEX outbox_subscription_leased_idx ON outbox (subscription_id, lease_until)
    WHERE status = 'pending' AND subscription_id IS NOT NULL AND lease_until IS NOT NULL;

-- The delivery health of a subscription's endpoint: its consecutive failed
-- attempts (a delivered attempt deletes the row) and, once they reach
-- outbox.webhook_endpoint_failures, when the endpoint may be tried again. A
-- subscription without a row is healthy.
CREATE TABLE outbox_endpoint (
    subscription_id text        PRIMARY KEY REFERENCES subscription (id) ON DELETE CASCADE,
    failures        integer     NOT NULL CHECK (failures >= 0),
    paused_until    timestamptz
);

-- +goose Down
DROP TABLE outbox_endpoint;
DROP INDEX outbox_subscription_leased_idx;
DROP INDEX outbox_subscription_pending_idx;
