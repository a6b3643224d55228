-- +goose Up
-- Maintenance sweeps run on every control replica, but each pass must run on one
-- replica only. A replica runs a pass only after it holds the sweep's claim: the row
-- names the owner and when the claim ends. All times come from the database's clock.
CREATE TABLE sweep_claim (
    name             text        PRIMARY KEY,
    owner            text        NOT NULL,
    claimed_at       timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL,
    last_finished_at timestamptz,
    last_error       text
);

-- +goose Down
DROP TABLE sweep_claim;
