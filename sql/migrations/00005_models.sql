-- +goose Up
-- Models: a workspace's named use of a model provider (docs/decisions/0014-models.md). A model has no id: its key is the identifier,
-- unique within the workspace and never changed, so (workspace_id, key) is the
-- primary key. settings were validated by the provider type's per-API schema
-- when written.
CREATE TABLE model (
    workspace_id  text        NOT NULL REFERENCES workspace (id),
    key           text        NOT NULL CHECK (key ~ '^[a-z0-9][a-z0-9.-]{0,127}$'),
    provider_id   text        NOT NULL REFERENCES provider (id),
    api           text        NOT NULL,
    model         text        NOT NULL CHECK (char_length(model) BETWEEN 1 AND 200),
    settings      jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(settings) = 'object'),
    enabled       boolean     NOT NULL DEFAULT true,
    version       integer     NOT NULL DEFAULT 1,
    created_by_id text        NOT NULL REFERENCES principal (id),
    updated_by_id text        NOT NULL REFERENCES principal (id),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, key)
);
-- Lists are per workspace, newest first: keyset on (created_at, key) descending.
CREATE INDEX model_workspace_created_idx ON model (workspace_id, created_at DESC, key DESC);
-- The models of a provider (foreign key checks, and later "which models use it").
CREATE INDEX model_provider_idx ON model (provider_id);

-- +goose Down
DROP TABLE model;
