-- +goose Up
-- Who may do what: organizations own workspaces; people (user accounts) and
-- services act as principals; memberships grant roles; API keys, login sessions
-- and mail links authenticate; invitations bring new members in. Every change to
-- a resource is written to audit_event in the same transaction.

CREATE TABLE organization (
    id         text        PRIMARY KEY,
    name       text        NOT NULL,
    version    integer     NOT NULL DEFAULT 1,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE principal (
    id           text        PRIMARY KEY,
    kind         text        NOT NULL CHECK (kind IN ('user', 'service')),
    display_name text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE workspace (
    id              text        PRIMARY KEY,
    organization_id text        NOT NULL REFERENCES organization (id),
    name            text        NOT NULL,
    version         integer     NOT NULL DEFAULT 1,
    created_by_id   text        NOT NULL REFERENCES principal (id),
    updated_by_id   text        NOT NULL REFERENCES principal (id),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX workspace_organization_idx ON workspace (organization_id, id DESC);

CREATE TABLE user_account (
    id            text        PRIMARY KEY,
    principal_id  text        NOT NULL UNIQUE REFERENCES principal (id),
    email         text        NOT NULL,
    password_hash text,
    disabled_at   timestamptz,
    version       integer     NOT NULL DEFAULT 1,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
-- E-mail addresses are unique whatever their case.
CREATE UNIQUE INDEX user_account_email_idx ON user_account (lower(email));

CREATE TABLE organization_member (
    organization_id text        NOT NULL REFERENCES organization (id),
    principal_id    text        NOT NULL REFERENCES principal (id),
    role            text        NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    version         integer     NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, principal_id)
);
CREATE INDEX organization_member_principal_idx ON organization_member (principal_id);

CREATE TABLE workspace_member (
    workspace_id text        NOT NULL REFERENCES workspace (id),
    principal_id text        NOT NULL REFERENCES principal (id),
    role         text        NOT NULL CHECK (role IN ('admin', 'editor', 'runner', 'viewer')),
    version      integer     NOT NULL DEFAULT 1,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, principal_id)
);
CREATE INDEX workspace_member_principal_idx ON workspace_member (principal_id);

-- API keys are stored as the SHA-256 of the token only; the token is shown once.
CREATE TABLE api_key (
    id            text        PRIMARY KEY,
    workspace_id  text        NOT NULL REFERENCES workspace (id),
    principal_id  text        NOT NULL REFERENCES principal (id),
    name          text        NOT NULL,
    role          text        NOT NULL CHECK (role IN ('admin', 'editor', 'runner', 'viewer')),
    token_hash    bytea       NOT NULL UNIQUE,
    prefix        text        NOT NULL,
    expires_at    timestamptz,
    last_used_at  timestamptz,
    revoked_at    timestamptz,
    version       integer     NOT NULL DEFAULT 1,
    created_by_id text        NOT NULL REFERENCES principal (id),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_key_workspace_idx ON api_key (workspace_id, id DESC);

CREATE TABLE login_session (
    id           text        PRIMARY KEY,
    user_id      text        NOT NULL REFERENCES user_account (id),
    token_hash   bytea       NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    last_seen_at timestamptz
);
CREATE INDEX login_session_user_idx ON login_session (user_id);

CREATE TABLE mail_link (
    id         text        PRIMARY KEY,
    user_id    text        NOT NULL REFERENCES user_account (id),
    purpose    text        NOT NULL CHECK (purpose IN ('password_reset', 'sign_in')),
    token_hash bytea       NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    revoked_at timestamptz
);

CREATE TABLE invitation (
    id              text        PRIMARY KEY,
    organization_id text        NOT NULL REFERENCES organization (id),
    workspace_id    text        REFERENCES workspace (id),
    email           text        NOT NULL,
    role            text        NOT NULL,
    principal_id    text        REFERENCES principal (id),
    invited_by_id   text        NOT NULL REFERENCES principal (id),
    token_hash      bytea       NOT NULL UNIQUE,
    version         integer     NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    accepted_at     timestamptz,
    revoked_at      timestamptz
);
-- One pending invitation per address and target.
CREATE UNIQUE INDEX invitation_pending_idx ON invitation (organization_id, coalesce(workspace_id, ''), lower(email))
    WHERE accepted_at IS NULL AND revoked_at IS NULL;
CREATE INDEX invitation_organization_idx ON invitation (organization_id, id DESC);

CREATE TABLE audit_event (
    id              text        PRIMARY KEY,
    organization_id text,
    workspace_id    text,
    actor_id        text,
    action          text        NOT NULL,
    subject_type    text        NOT NULL,
    subject_id      text        NOT NULL,
    version         integer,
    changed_fields  text[]      NOT NULL DEFAULT '{}',
    request_id      text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_event_workspace_idx ON audit_event (workspace_id, id DESC);
CREATE INDEX audit_event_subject_idx ON audit_event (subject_id, id DESC);

-- The transactional outbox: a delivery is written in the same transaction as the
-- change that causes it; the outbox engine claims, delivers, retries and purges.
CREATE TABLE outbox (
    id              text        PRIMARY KEY,
    kind            text        NOT NULL CHECK (kind IN ('webhook', 'identity_mail', 'subagent_result', 'memory_namespace_purge', 'checkpoint_cleanup')),
    workspace_id    text,
    payload         jsonb       NOT NULL,
    -- Secrets of a delivery (a mailed token, say) are sealed with the key ring.
    sealed          bytea,
    status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    lease_until     timestamptz,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    settled_at      timestamptz
);
CREATE INDEX outbox_due_idx ON outbox (kind, next_attempt_at) WHERE status = 'pending';
CREATE INDEX outbox_settled_idx ON outbox (kind, settled_at) WHERE status <> 'pending';

-- +goose Down
DROP TABLE outbox;
DROP TABLE audit_event;
DROP TABLE invitation;
DROP TABLE mail_link;
DROP TABLE login_session;
DROP TABLE api_key;
DROP TABLE workspace_member;
DROP TABLE organization_member;
DROP TABLE user_account;
DROP TABLE workspace;
DROP TABLE principal;
DROP TABLE organization;
