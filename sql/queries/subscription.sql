-- name: SubscriptionInsert :one
INSERT INTO subscription (id, workspace_id, url, event_types, enabled, description, secret, created_by_id, updated_by_id)
VALUES (@id, @workspace_id, @url, @event_types::text[], @enabled, @description, @secret, @created_by_id, @created_by_id)
RETURNING *;

-- name: SubscriptionGet :one
SELECT * FROM subscription WHERE workspace_id = @workspace_id AND id = @id;

-- name: SubscriptionGetForUpdate :one
-- FOR UPDATE (not NO KEY): the row may be deleted by the holder.
SELECT * FROM subscription WHERE workspace_id = @workspace_id AND id = @id
FOR UPDATE;

-- name: SubscriptionList :many
SELECT * FROM subscription
WHERE workspace_id = @workspace_id AND id < @after_id
ORDER BY id DESC
LIMIT @page_limit;

-- name: SubscriptionUpdate :one
UPDATE subscription
SET url = @url, event_types = @event_types::text[], enabled = @enabled, description = @description,
    secret = @secret, updated_by_id = @updated_by_id, version = version + 1, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: SubscriptionDelete :exec
DELETE FROM subscription WHERE id = @id;

-- SubscriptionLockCreate serializes the creates of one workspace's
-- subscriptions until the transaction ends, so the count that follows (a
-- statement of its own, with a snapshot taken after the lock) sees every
-- create committed before and the cap holds under concurrent creates.
-- name: SubscriptionLockCreate :exec
SELECT pg_advisory_xact_lock(hashtextextended('subscription_create:' || @workspace_id::text, 0));

-- name: SubscriptionCount :one
SELECT count(*)::int FROM subscription WHERE workspace_id = @workspace_id;

-- name: SubscriptionEndpointHealth :many
-- The endpoint health of subscriptions that have any (outbox_endpoint): a
-- subscription without a row is healthy.
SELECT subscription_id, failures, paused_until FROM outbox_endpoint
WHERE subscription_id = ANY(@ids::text[]);
