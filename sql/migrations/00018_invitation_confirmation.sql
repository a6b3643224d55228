-- +goose Up
-- An acceptance of an invitation for an address without an account, waiting
-- for the invitee to follow the confirmation link mailed to the address. Only
-- the SHA-256 of the link's token is stored, with the argon2id hash of the
-- password the account will get. One per invitation: a newer one replaces it.
CREATE TABLE invitation_confirmation (
    id            text        PRIMARY KEY,
    invitation_id text        NOT NULL UNIQUE REFERENCES invitation (id) ON DELETE CASCADE,
    token_hash    bytea       NOT NULL UNIQUE,
    password_hash text        NOT NULL,
    display_name  text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL
);

CREATE INDEX invitation_confirmation_expires_idx ON invitation_confirmation (expires_at);

-- +goose Down
DROP TABLE invitation_confirmation;
