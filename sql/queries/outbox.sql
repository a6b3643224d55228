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

-- OutboxNotify notifies the senders listening on svc_outbox, at the commit of
-- the caller's transaction, that a delivery of kind is due without having
-- been inserted (a redelivery).
-- name: OutboxNotify :exec
SELECT pg_notify('svc_outbox', @kind::text);

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

-- OutboxWebhookCandidates picks the subscriptions the next webhook claim may
-- take deliveries of, and locks them for the claiming transaction, so that of
-- several senders (on every control replica) one at a time counts and claims
-- a subscription's deliveries. A subscription is a candidate when it has a
-- due delivery, its endpoint is not backed off and fewer than in_flight of its
-- deliveries are leased. It walks the subscriptions with pending deliveries
-- one index probe each (a skip scan), not the due rows, so a deep backlog of
-- one subscription costs no more than one row. Candidates are taken in turns
-- across workspaces (every workspace's first subscription, then every
-- workspace's second, and so on), each workspace's oldest due first; one
-- whose lock another sender holds is skipped.
-- name: OutboxWebhookCandidates :many
WITH RECURSIVE subs AS (
    (SELECT o.subscription_id AS id FROM outbox o
     WHERE o.status = 'pending' AND o.subscription_id IS NOT NULL
     ORDER BY o.subscription_id LIMIT 1)
    UNION ALL
    SELECT (SELECT o.subscription_id FROM outbox o
            WHERE o.status = 'pending' AND o.subscription_id > subs.id
            ORDER BY o.subscription_id LIMIT 1)
    FROM subs WHERE subs.id IS NOT NULL
), due AS (
    SELECT subs.id, first.workspace_id, first.next_attempt_at AS oldest
    FROM subs
    CROSS JOIN LATERAL (
        SELECT o.workspace_id, o.next_attempt_at FROM outbox o
        WHERE o.subscription_id = subs.id AND o.status = 'pending' AND o.next_attempt_at <= now()
        ORDER BY o.next_attempt_at LIMIT 1
    ) first
    WHERE subs.id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM outbox_endpoint e WHERE e.subscription_id = subs.id AND e.paused_until > now())
      AND (SELECT count(*) FROM outbox l
           WHERE l.subscription_id = subs.id AND l.status = 'pending' AND l.lease_until > now()) < @in_flight::int
), fair AS (
    SELECT due.id, due.oldest, row_number() OVER (PARTITION BY due.workspace_id ORDER BY due.oldest, due.id) AS turn
    FROM due
    ORDER BY turn, due.oldest
    LIMIT @batch
)
SELECT s.id FROM subscription s JOIN fair ON fair.id = s.id
ORDER BY fair.turn, fair.oldest
FOR NO KEY UPDATE OF s SKIP LOCKED;

-- OutboxWebhookClaim leases due deliveries of the given subscriptions, which
-- the transaction holds locked (OutboxWebhookCandidates): at most in_flight
-- leased per subscription, counted now that no other sender can claim for
-- them, and at most batch in all, in the subscriptions' order. The lease and
-- counters are those of OutboxClaim.
-- name: OutboxWebhookClaim :many
WITH bound AS (
    SELECT @in_flight::int AS in_flight
), subs AS (
    SELECT s.id, s.turn FROM unnest(@subscription_ids::text[]) WITH ORDINALITY AS s(id, turn)
), due AS (
    SELECT d.id, subs.turn FROM subs
    CROSS JOIN LATERAL (
        SELECT o.id, o.next_attempt_at FROM outbox o
        WHERE o.subscription_id = subs.id AND o.status = 'pending' AND o.next_attempt_at <= now()
        ORDER BY o.next_attempt_at
        LIMIT greatest(0, (SELECT bound.in_flight FROM bound) - (SELECT count(*) FROM outbox l
            WHERE l.subscription_id = subs.id AND l.status = 'pending' AND l.lease_until > now()))
        FOR UPDATE SKIP LOCKED
    ) d
    ORDER BY subs.turn, d.next_attempt_at
    LIMIT @batch
)
UPDATE outbox o
SET attempts = o.attempts + 1,
    attempt_number = o.attempt_number + 1,
    lease_until = now() + make_interval(secs => @lease_seconds::float8),
    next_attempt_at = now() + make_interval(secs => @lease_seconds::float8)
FROM due
WHERE o.id = due.id
RETURNING o.id, o.kind, o.workspace_id, o.subscription_id, o.event_type, o.payload, o.sealed,
    o.attempts, o.attempt_number, o.created_at, now()::timestamptz AS claimed_at, due.turn::int AS turn;

-- OutboxSettle records the outcomes of finished attempts in one statement. A
-- row is updated only while it still carries the attempt's number and is
-- pending, so the result of a sender whose lease ran out (and whose row another
-- sender claimed again) is dropped. status 'pending' schedules a retry after
-- retry_seconds; uncharged gives the attempt back (a sender stopping). Each
-- recorded outcome also becomes an outbox_attempt row, unless uncharged. The
-- charged outcomes of webhook deliveries also keep their endpoint's health in
-- outbox_endpoint: a delivered attempt clears it, failed ones add up.
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
    RETURNING o.id, o.subscription_id
), health AS (
    -- What the batch says of each webhook endpoint: whether one of its
    -- attempts was delivered, and how many failed.
    SELECT upd.subscription_id AS id,
        bool_or(r.result = 'delivered') AS delivered,
        (count(*) FILTER (WHERE r.result = 'failed'))::int AS failed
    FROM r JOIN upd ON upd.id = r.id
    WHERE upd.subscription_id IS NOT NULL AND r.charged
    GROUP BY upd.subscription_id
), healed AS (
    -- A delivered attempt makes the endpoint healthy: no row.
    DELETE FROM outbox_endpoint e
    USING health h
    WHERE e.subscription_id = h.id AND h.delivered
), policy AS (
    SELECT @endpoint_failures::int AS threshold, @backoff_base_seconds::float8 AS base,
        @max_backoff_seconds::float8 AS cap
), hurt AS (
    -- An endpoint whose consecutive failures reach the threshold is backed
    -- off as a whole: base doubled for each failure beyond, at most cap, less
    -- up to a quarter of jitter.
    INSERT INTO outbox_endpoint AS e (subscription_id, failures, paused_until)
    SELECT h.id, h.failed,
        CASE WHEN h.failed >= p.threshold THEN now() + make_interval(secs =>
            least(p.cap, p.base * 2 ^ least(h.failed - p.threshold, 30)) * (1 - random() / 4)) END
    FROM health h, policy p
    WHERE NOT h.delivered AND h.failed > 0
    ON CONFLICT (subscription_id) DO UPDATE
    SET failures = e.failures + excluded.failures,
        paused_until = (
            SELECT CASE WHEN e.failures + excluded.failures >= p.threshold THEN now() + make_interval(secs =>
                least(p.cap, p.base * 2 ^ least(e.failures + excluded.failures - p.threshold, 30)) * (1 - random() / 4))
                ELSE e.paused_until END
            FROM policy p)
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
