-- OutboxInsert writes a delivery and notifies the senders listening on
-- svc_outbox; PostgreSQL sends the notification when the transaction commits
-- (and folds identical ones of one transaction into one).
-- name: OutboxInsert :exec
WITH ins AS (
    INSERT INTO outbox (id, kind, workspace_id, payload, sealed, subscription_id, event_type)
    VALUES (@id, @kind, sqlc.narg('workspace_id'), @payload, sqlc.narg('sealed'), sqlc.narg('subscription_id'), sqlc.narg('event_type'))
    RETURNING kind
)
SELECT pg_notify('svc_outbox', ins.kind) FROM ins;

-- OutboxClaim leases up to batch due deliveries of one kind to the caller: the
-- lease is the row's next_attempt_at, so a sender that dies makes the row due
-- again when its lease ends. Both counters move: attempts (this round) and
-- attempt_number (ever), which fences the sender's result.
-- name: OutboxClaim :many
WITH due AS (
    SELECT d.id FROM outbox d
    WHERE d.kind = @kind AND d.status = 'pending' AND d.next_attempt_at <= now()
    ORDER BY d.next_attempt_at
    LIMIT @batch
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox o
SET attempts = o.attempts + 1,
    attempt_number = o.attempt_number + 1,
    lease_until = now() + make_interval(secs => @lease_seconds::float8),
    next_attempt_at = now() + make_interval(secs => @lease_seconds::float8)
FROM due
WHERE o.id = due.id
RETURNING o.id, o.kind, o.workspace_id, o.subscription_id, o.event_type, o.payload, o.sealed,
    o.attempts, o.attempt_number, o.created_at, now()::timestamptz AS claimed_at;

-- OutboxSettle records the outcomes of finished attempts in one statement. A
-- row is updated only while it still carries the attempt's number and is
-- pending, so the result of a sender whose lease ran out (and whose row another
-- sender claimed again) is dropped. status 'pending' schedules a retry after
-- retry_seconds; uncharged gives the attempt back (a sender stopping). Each
-- recorded outcome also becomes an outbox_attempt row, unless uncharged.
-- name: OutboxSettle :many
WITH r AS (
    SELECT unnest(@ids::text[]) AS id, unnest(@numbers::int[]) AS number,
        unnest(@statuses::text[]) AS status, unnest(@retry_seconds::float8[]) AS retry_seconds,
        unnest(@charged::boolean[]) AS charged, unnest(@started_at::timestamptz[]) AS started_at,
        unnest(@duration_ms::int[]) AS duration_ms, unnest(@results::text[]) AS result,
        unnest(@status_codes::int[]) AS status_code, unnest(@responses::text[]) AS response,
        unnest(@errors::text[]) AS error
), upd AS (
    UPDATE outbox o
    SET status = r.status,
        next_attempt_at = CASE WHEN r.status = 'pending' THEN now() + make_interval(secs => r.retry_seconds) ELSE o.next_attempt_at END,
        attempts = CASE WHEN r.charged THEN o.attempts ELSE o.attempts - 1 END,
        lease_until = NULL,
        settled_at = CASE WHEN r.status = 'pending' THEN NULL ELSE now() END,
        last_error = CASE WHEN r.charged THEN NULLIF(r.error, '') ELSE o.last_error END
    FROM r
    -- settled_at IS NULL means pending; said so rather than with status, the
    -- planner cannot pick the pending rows' partial index (which it believes
    -- tiny when most rows are settled) over the primary key.
    WHERE o.id = r.id AND o.attempt_number = r.number AND o.settled_at IS NULL
    RETURNING o.id
), att AS (
    INSERT INTO outbox_attempt (delivery_id, number, replica, started_at, duration_ms, result, status_code, response, error)
    SELECT r.id, r.number, @replica, r.started_at, r.duration_ms, r.result,
        NULLIF(r.status_code, 0), NULLIF(r.response, ''), NULLIF(r.error, '')
    FROM r JOIN upd ON upd.id = r.id
    WHERE r.charged
)
SELECT upd.id::text FROM upd;

-- OutboxPurge deletes up to batch rows of one kind and settled status whose
-- retention has passed, oldest first. Pending rows are never touched; a row
-- locked by a concurrent redelivery is skipped.
-- name: OutboxPurge :execrows
DELETE FROM outbox
WHERE id IN (
    SELECT s.id FROM outbox s
    WHERE s.kind = @kind AND s.status = @status AND s.status <> 'pending'
      AND s.settled_at < now() - make_interval(secs => @retention_seconds::float8)
    ORDER BY s.settled_at
    LIMIT @batch
    FOR UPDATE SKIP LOCKED
);

-- name: OutboxPendingStats :many
SELECT kind,
    count(*)::bigint AS pending,
    coalesce(extract(epoch FROM now() - min(created_at) FILTER (WHERE next_attempt_at <= now())), 0)::float8 AS oldest_due_seconds
FROM outbox
WHERE status = 'pending'
GROUP BY kind;

-- name: OutboxDeadCount :one
SELECT count(*)::bigint FROM outbox WHERE kind = @kind AND status = 'dead';

-- OutboxBacklogObserve records whether a kind's backlog condition holds now
-- and answers whether it has held for alert_seconds. The start of a breach is
-- kept, so every replica observing it computes the same alert.
-- name: OutboxBacklogObserve :one
INSERT INTO outbox_backlog AS b (kind, breached_since, observed_at)
VALUES (@kind, CASE WHEN @breached::boolean THEN now() END, now())
ON CONFLICT (kind) DO UPDATE
SET breached_since = CASE WHEN @breached::boolean THEN coalesce(b.breached_since, now()) END,
    observed_at = now()
RETURNING (breached_since IS NOT NULL AND breached_since <= now() - make_interval(secs => @alert_seconds::float8))::boolean AS alert;
