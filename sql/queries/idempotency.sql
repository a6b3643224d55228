-- Idempotency-Key records; see sql/migrations/00003_idempotency.sql. Every
-- statement stands alone (no transaction is held while a handler runs).

-- name: IdempotencyKeyClaim :one
-- Inserts an in_progress record for a new key, or takes over the record of an
-- expired one (a completed record past its 24 hours, or an in_progress record
-- whose lease ran out). Returns no row while a live record holds the key.
INSERT INTO idempotency_key (id, workspace_id, principal_id, method, route, key_hash, fingerprint, state, expires_at)
VALUES (@id, @workspace_id, @principal_id, @method, @route, @key_hash, @fingerprint, 'in_progress',
        now() + make_interval(secs => sqlc.arg('lease_seconds')::double precision))
ON CONFLICT (workspace_id, principal_id, method, route, key_hash) DO UPDATE
SET id = excluded.id, fingerprint = excluded.fingerprint, state = 'in_progress', status = NULL,
    response = NULL, created_at = now(), expires_at = excluded.expires_at, completed_at = NULL
WHERE idempotency_key.expires_at <= now()
RETURNING id;

-- name: IdempotencyKeyGetLive :one
-- The unexpired record holding a key.
SELECT id, fingerprint, state, status, response FROM idempotency_key
WHERE workspace_id = @workspace_id AND principal_id = @principal_id AND method = @method
  AND route = @route AND key_hash = @key_hash AND expires_at > now();

-- name: IdempotencyKeyComplete :execrows
-- Stores the first response; the record then lives 24 hours from its creation.
-- A streamed request's fingerprint is known only once its body was read, so
-- it is stored here (null keeps the one claimed with).
UPDATE idempotency_key
SET state = 'completed', status = @status, response = @response, completed_at = now(),
    fingerprint = coalesce(sqlc.narg('fingerprint'), fingerprint),
    expires_at = created_at + make_interval(secs => sqlc.arg('ttl_seconds')::double precision)
WHERE id = @id AND state = 'in_progress';

-- name: IdempotencyKeyRelease :execrows
-- Frees a key whose request failed (5xx or panic), so that a retry runs again.
DELETE FROM idempotency_key WHERE id = @id AND state = 'in_progress';

-- name: IdempotencyKeyPurgeExpired :execrows
-- The purge_idempotency_keys sweep: expired records, a bounded batch per
-- statement. Rows locked by a request taking them over are left for next time.
DELETE FROM idempotency_key
WHERE id IN (
    SELECT id FROM idempotency_key
    WHERE expires_at <= now()
    LIMIT @batch
    FOR UPDATE SKIP LOCKED);
