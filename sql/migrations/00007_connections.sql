-- +goose Up
-- Connections: a workspace's connected account at an app, made through a
-- connector provider (docs/decisions/0019-connections.md).
-- app names the app (the vendor's toolkit slug, e.g. github) and never changes;
-- account is the vendor's user under which the account is connected (null until
-- known). credential is the sealed JSON credential, bound to the row's id as
-- associated data, null when none (never stored, or revoked). Connections are
-- never deleted.
CREATE TABLE connection (
    id            text        PRIMARY KEY,
    workspace_id  text        NOT NULL REFERENCES workspace (id),
    provider_id   text        NOT NULL REFERENCES provider (id),
    app           text        NOT NULL CHECK (app ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    account       text        CHECK (char_length(account) BETWEEN 1 AND 200),
    name          text        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    config        jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(config) = 'object'),
    credential    bytea,
    enabled       boolean     NOT NULL DEFAULT true,
    version       integer     NOT NULL DEFAULT 1,
    created_by_id text        NOT NULL REFERENCES principal (id),
    updated_by_id text        NOT NULL REFERENCES principal (id),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
-- Lists are per workspace, newest first (keyset on id DESC; ids sort by time).
CREATE INDEX connection_workspace_idx ON connection (workspace_id, id DESC);
-- The connections of a provider (foreign key checks on the provider).
CREATE INDEX connection_provider_idx ON connection (provider_id);

-- Connection authorization operations: an OAuth-style authorization of a
-- connection in progress, driven by the process named in owner, which polls
-- the vendor and renews lease_until while it lives. vendor_state is the sealed
-- JSON state the vendor handed back when the authorization began (Composio: the
-- connected account being authorized), bound to the operation's id. A pending
-- operation whose owner's lease lapsed is taken over, or, past its deadline,
-- expired by the recover_connection_operations sweep. At most one operation per
-- connection is pending: a new one supersedes the old.
CREATE TABLE connection_operation (
    id            text        PRIMARY KEY,
    workspace_id  text        NOT NULL REFERENCES workspace (id),
    connection_id text        NOT NULL REFERENCES connection (id),
    status        text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed', 'expired')),
    redirect_url  text,
    vendor_state  bytea,
    error         text,
    owner         text        NOT NULL,
    lease_until   timestamptz NOT NULL,
    deadline      timestamptz NOT NULL,
    version       integer     NOT NULL DEFAULT 1,
    created_by_id text        NOT NULL REFERENCES principal (id),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    settled_at    timestamptz,
    CHECK ((status = 'pending') = (settled_at IS NULL)),
    CHECK (status IN ('pending', 'succeeded') OR error IS NOT NULL)
);
CREATE UNIQUE INDEX connection_operation_pending_idx ON connection_operation (connection_id) WHERE status = 'pending';
-- The recovery sweep's scan and each owner's drive: pending operations only.
CREATE INDEX connection_operation_lease_idx ON connection_operation (lease_until) WHERE status = 'pending';
CREATE INDEX connection_operation_owner_idx ON connection_operation (owner) WHERE status = 'pending';

-- +goose Down
DROP TABLE connection_operation;
DROP TABLE connection;
