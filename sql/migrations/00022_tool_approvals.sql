-- +goose Up
-- Tool approvals (docs/decisions/0052-tool-approvals.md). A run whose step
-- asks for a tool its agent's policy marks `ask` records the step, gives up
-- its lease and waits (status waiting, ready_at far in the future, the call
-- in waiting_calls) until a person decides or the approval times out. A run
-- whose descendant waits shows waiting too. Time spent waiting for a person
-- does not count against the run's time limit: approval_waited_seconds
-- holds the waits that ended, waiting_since the one under way.
ALTER TABLE run DROP CONSTRAINT run_status_check;
ALTER TABLE run ADD CONSTRAINT run_status_check
    CHECK (status IN ('accepted', 'running', 'waiting', 'succeeded', 'failed', 'cancelled'));
ALTER TABLE run ADD COLUMN approval_waited_seconds float8 NOT NULL DEFAULT 0;
ALTER TABLE run ADD COLUMN waiting_since timestamptz;

-- One row per call that asked for approval. status: pending until a person
-- approves or denies it, the timeout passes (expired: denied, or the run
-- failed, per on_timeout) or the run ends first (closed).
CREATE TABLE run_approval (
    run_id        text        NOT NULL REFERENCES run (id),
    call_id       text        NOT NULL,
    workspace_id  text        NOT NULL REFERENCES workspace (id),
    thread_id     text        NOT NULL REFERENCES thread (id),
    name          text        NOT NULL,
    arguments     text        NOT NULL,
    status        text        NOT NULL DEFAULT 'pending'
                              CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'closed')),
    on_timeout    text        NOT NULL CHECK (on_timeout IN ('deny', 'fail')),
    message       text,
    decided_by_id text        REFERENCES principal (id),
    requested_at  timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    decided_at    timestamptz,
    PRIMARY KEY (run_id, call_id),
    CHECK ((status = 'pending') = (decided_at IS NULL))
);
-- The approvals inbox lists a workspace's pending calls; expire_approvals
-- walks them by their end.
CREATE INDEX run_approval_pending_idx ON run_approval (workspace_id, run_id) WHERE status = 'pending';
CREATE INDEX run_approval_expiry_idx ON run_approval (expires_at) WHERE status = 'pending';

-- +goose Down
DROP TABLE run_approval;
ALTER TABLE run DROP COLUMN waiting_since;
ALTER TABLE run DROP COLUMN approval_waited_seconds;
UPDATE run SET status = 'running' WHERE status = 'waiting';
ALTER TABLE run DROP CONSTRAINT run_status_check;
ALTER TABLE run ADD CONSTRAINT run_status_check
    CHECK (status IN ('accepted', 'running', 'succeeded', 'failed', 'cancelled'));
