-- +goose Up
-- Providers: configured accounts of external services, one collection per kind
-- (docs/decisions/0013-providers.md). Secrets are sealed with the key
-- ring, bound to the row's id as associated data, and never leave the service:
-- credential holds the sealed JSON credential (null when none), extra_headers the
-- sealed JSON object of a model provider's extra headers (null when none), whose
-- names alone are kept in clear in extra_header_names for the view.
-- Providers are never deleted.
CREATE TABLE provider (
    id                 text        PRIMARY KEY,
    workspace_id       text        NOT NULL REFERENCES workspace (id),
    kind               text        NOT NULL CHECK (kind IN ('model', 'web', 'environment', 'connector', 'memory')),
    type               text        NOT NULL,
    name               text        NOT NULL,
    config             jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(config) = 'object'),
    credential         bytea,
    extra_headers      bytea,
    extra_header_names text[]      NOT NULL DEFAULT '{}',
    enabled            boolean     NOT NULL DEFAULT true,
    version            integer     NOT NULL DEFAULT 1,
    created_by_id      text        NOT NULL REFERENCES principal (id),
    updated_by_id      text        NOT NULL REFERENCES principal (id),
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CHECK (kind = 'model' OR (extra_headers IS NULL AND cardinality(extra_header_names) = 0)),
    CHECK ((extra_headers IS NULL) = (cardinality(extra_header_names) = 0))
);
-- Lists are per workspace and kind, newest first (keyset on id DESC).
CREATE INDEX provider_workspace_kind_idx ON provider (workspace_id, kind, id DESC);

-- +goose Down
DROP TABLE provider;
