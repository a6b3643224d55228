-- +goose Up
-- Idempotency-Key records (docs/decisions/0010-idempotency.md).
-- A record is scoped to the caller (workspace and principal), the operation
-- (method and route template) and the SHA-256 of the client's key. It is
-- in_progress while the first request runs, then completed with the response,
-- whose headers and body are sealed with the key ring (a created API key's token
-- is in it). expires_at is a short lease while in_progress, so a request lost
-- with its process frees the key, and created_at + 24 hours once completed; an
-- expired record is taken over by the next request with its key and deleted by
-- the purge_idempotency_keys sweep. All times come from the database's clock.
-- No foreign keys: records are short-lived and must never hold up other deletes.
CREATE TABLE idempotency_key (
    id           text        PRIMARY KEY,
    workspace_id text        NOT NULL,
    principal_id text        NOT NULL,
    method       text        NOT NULL,
    route        text        NOT NULL,
    key_hash     bytea       NOT NULL,
    fingerprint  bytea       NOT NULL,
    state        text        NOT NULL CHECK (state IN ('in_progress', 'completed')),
    status       integer,
    response     bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    completed_at timestamptz,
    CHECK ((state = 'completed') = (status IS NOT NULL AND response IS NOT NULL))
);
CREATE UNIQUE INDEX idempotency_key_scope_idx ON idempotency_key (workspace_id, principal_id, method, route, key_hash);
CREATE INDEX idempotency_key_expires_idx ON idempotency_key (expires_at);

-- +goose Down
DROP TABLE idempotency_key;
