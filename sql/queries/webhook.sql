-- WebhookSubscriptionsForEvent lists the enabled subscriptions of a workspace
-- that want an event type, in the emitting transaction. FOR KEY SHARE keeps a
-- subscription from being deleted until that transaction ends, so the
-- deliveries it then inserts never meet a vanished subscription (a concurrent
-- delete either waits, or committed first and its row is skipped). It does
-- not block a PATCH's enabled flag or another emitter. The workspace's
-- subscription index (workspace_id, id DESC) finds the candidates.
-- name: WebhookSubscriptionsForEvent :many
SELECT s.id FROM subscription s
WHERE s.workspace_id = @workspace_id AND s.enabled AND @event_type::text = ANY (s.event_types)
ORDER BY s.id
FOR KEY SHARE;

-- WebhookSubscriptionForDelivery reads what the sender needs of a delivery's
-- subscription.
-- name: WebhookSubscriptionForDelivery :one
SELECT s.id, s.url, s.enabled, s.secret FROM subscription s
WHERE s.workspace_id = @workspace_id AND s.id = @id;

-- WebhookSubscriptionDisable disables a subscription whose endpoint answered
-- 410 Gone, unless it is disabled already or its url changed since the sender
-- read it (the new endpoint did not say Gone). It answers nothing then.
-- updated_by_id keeps the last principal's: the service is no principal, and
-- the audit event (no actor) records who did it.
-- name: WebhookSubscriptionDisable :one
UPDATE subscription s
SET enabled = false, version = s.version + 1, updated_at = now()
FROM workspace w
WHERE s.workspace_id = @workspace_id AND s.id = @id AND s.url = @url AND s.enabled
  AND w.id = s.workspace_id
RETURNING s.id, s.version, w.organization_id;

-- WebhookDeliveryList lists a subscription's deliveries newest first (ids
-- sort by creation) on the outbox's (subscription_id, id DESC) index.
-- name: WebhookDeliveryList :many
SELECT * FROM outbox
WHERE workspace_id = @workspace_id AND subscription_id = @subscription_id AND kind = 'webhook' AND id < @after_id
ORDER BY id DESC
LIMIT @page_limit;

-- WebhookDeliveryListByStatus lists a subscription's deliveries of one status,
-- newest first. Dead and cancelled ones come from their partial index
-- (outbox_subscription_failed_idx), which the planner can use only when it
-- sees the status: run it with custom plans (WebhookDeliveryListPlanCustom).
-- name: WebhookDeliveryListByStatus :many
SELECT * FROM outbox
WHERE workspace_id = @workspace_id AND subscription_id = @subscription_id AND kind = 'webhook' AND id < @after_id
  AND status = @status
ORDER BY id DESC
LIMIT @page_limit;

-- name: WebhookDeliveryListPlanCustom :exec
-- Plans the transaction's statements for their actual parameters.
SELECT set_config('plan_cache_mode', 'force_custom_plan', true);

-- name: WebhookDeliveryGet :one
SELECT * FROM outbox
WHERE workspace_id = @workspace_id AND id = @id AND kind = 'webhook';

-- WebhookDeliveryGetForUpdate locks a delivery for a redelivery. The engine's
-- claim and purge skip locked rows, so neither takes it meanwhile.
-- name: WebhookDeliveryGetForUpdate :one
SELECT * FROM outbox
WHERE workspace_id = @workspace_id AND id = @id AND kind = 'webhook'
FOR UPDATE;

-- WebhookDeliveryRedeliver puts a settled delivery back to pending, due now,
-- as a new round: attempts (this round) starts at 0 again; attempt_number
-- (every attempt ever) goes on, so attempt rows keep their numbers and a late
-- sender of an earlier round stays fenced out.
-- name: WebhookDeliveryRedeliver :one
UPDATE outbox
SET status = 'pending', attempts = 0, next_attempt_at = now(), settled_at = NULL, lease_until = NULL
WHERE id = @id AND status <> 'pending'
RETURNING *;

-- WebhookDeliveryAttempts lists the latest recorded attempts of a delivery,
-- newest first.
-- name: WebhookDeliveryAttempts :many
SELECT number, started_at, duration_ms, result, status_code, response, error
FROM outbox_attempt
WHERE delivery_id = @delivery_id
ORDER BY number DESC
LIMIT @max_attempts;
