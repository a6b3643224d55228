-- +goose Up
-- Webhook delivery inspection (docs/decisions/0022-webhooks.md). A workspace
-- admin lists a subscription's failures with ?status=dead or cancelled. The
-- outbox's (subscription_id, id DESC) index serves the unfiltered list, and
-- finds delivered rows (the bulk) quickly; the deployment-wide settled index
-- would read every dead row of every workspace to find one subscription's.
-- Only dead and cancelled rows enter this index, and they enter it once, when
-- settled: claims and retries of pending rows never touch it.
CREATE INDEX outbox_subscription_failed_idx ON outbox (subscription_id, status, id DESC)
    WHERE subscription_id IS NOT NULL AND status IN ('dead', 'cancelled');

-- +goose Down
DROP INDEX outbox_subscription_failed_idx;
