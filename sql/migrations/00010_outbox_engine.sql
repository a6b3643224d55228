-- +goose Up
-- The outbox engine (docs/decisions/0021-outbox-engine.md).
--
-- A delivery is claimed by setting next_attempt_at to the end of its lease, so
-- an expired lease simply makes the row due again and the one due index serves
-- both new work and rescue. attempts counts the attempts of the current round
-- (compared with max_attempts; an admin redelivery starts a new round at 0);
-- attempt_number counts every attempt ever and fences late results: a sender
-- records its outcome only while the row still carries its attempt's number.
--
-- cancelled settles a delivery that must not be sent (its subscription was
-- disabled); it is not an alert condition and is retained like a delivered one.
ALTER TABLE outbox DROP CONSTRAINT outbox_status_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_status_check CHECK (status IN ('pending', 'delivered', 'dead', 'cancelled'));
ALTER TABLE outbox ADD COLUMN attempt_number integer NOT NULL DEFAULT 0;
-- A row is settled exactly when it is not pending (the settle statement relies on it).
UPDATE outbox SET settled_at = coalesce(settled_at, now()) WHERE status <> 'pending';
UPDATE outbox SET settled_at = NULL WHERE status = 'pending';
ALTER TABLE outbox ADD CONSTRAINT outbox_settled_when_not_pending CHECK ((status = 'pending') = (settled_at IS NULL));
-- A webhook delivery names its subscription and event type; deleting the
-- subscription deletes its deliveries with it.
ALTER TABLE outbox ADD COLUMN subscription_id text REFERENCES subscription (id) ON DELETE CASCADE;
ALTER TABLE outbox ADD COLUMN event_type text;
ALTER TABLE outbox ADD CONSTRAINT outbox_webhook_target CHECK ((kind = 'webhook') = (subscription_id IS NOT NULL AND event_type IS NOT NULL));

DROP INDEX outbox_settled_idx;
-- Purge walks each kind's settled rows of one status oldest first; the dead
-- count reads the same index.
CREATE INDEX outbox_settled_idx ON outbox (kind, status, settled_at) WHERE status <> 'pending';
CREATE INDEX outbox_subscription_idx ON outbox (subscription_id, id DESC) WHERE subscription_id IS NOT NULL;

-- One row per attempt a sender finished and recorded. An attempt whose sender
-- died leaves no row; its number is skipped.
CREATE TABLE outbox_attempt (
    delivery_id text        NOT NULL REFERENCES outbox (id) ON DELETE CASCADE,
    number      integer     NOT NULL,
    replica     text        NOT NULL,
    started_at  timestamptz NOT NULL,
    duration_ms integer     NOT NULL,
    result      text        NOT NULL CHECK (result IN ('delivered', 'failed', 'cancelled')),
    status_code integer,
    response    text,
    error       text,
    PRIMARY KEY (delivery_id, number)
);

-- When each kind's backlog condition began to hold, as seen by the control
-- replicas; svc_outbox_backlog_alert is 1 once it has held for
-- backlog_alert_seconds. Kept in the database so every replica exports the same.
CREATE TABLE outbox_backlog (
    kind           text        PRIMARY KEY,
    breached_since timestamptz,
    observed_at    timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE outbox_backlog;
DROP TABLE outbox_attempt;
DROP INDEX outbox_subscription_idx;
DROP INDEX outbox_settled_idx;
CREATE INDEX outbox_settled_idx ON outbox (kind, settled_at) WHERE status <> 'pending';
ALTER TABLE outbox DROP CONSTRAINT outbox_webhook_target;
ALTER TABLE outbox DROP CONSTRAINT outbox_settled_when_not_pending;
ALTER TABLE outbox DROP COLUMN event_type;
ALTER TABLE outbox DROP COLUMN subscription_id;
ALTER TABLE outbox DROP COLUMN attempt_number;
DELETE FROM outbox WHERE status = 'cancelled';
ALTER TABLE outbox DROP CONSTRAINT outbox_status_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_status_check CHECK (status IN ('pending', 'delivered', 'dead'));
