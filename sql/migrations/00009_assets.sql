-- +goose Up
-- Assets: files a workspace uploads, kept in the object store under
-- ws/<workspace_id>/assets/<id> (docs/decisions/0017-object-store-and-assets.md).
-- An asset row exists only once its whole content is stored: size and sha256
-- are those of the stored bytes. DELETE retires an asset: the row
-- and its content stay, readable for history, and new references are refused.
CREATE TABLE asset (
    id            text        PRIMARY KEY,
    workspace_id  text        NOT NULL REFERENCES workspace (id),
    name          text        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    content_type  text        NOT NULL CHECK (char_length(content_type) BETWEEN 1 AND 255),
    size          bigint      NOT NULL CHECK (size >= 0),
    sha256        text        NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    object_key    text        NOT NULL UNIQUE,
    retired_at    timestamptz,
    version       integer     NOT NULL DEFAULT 1,
    created_by_id text        NOT NULL REFERENCES principal (id),
    updated_by_id text        NOT NULL REFERENCES principal (id),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
-- Lists are per workspace, newest first (keyset on id DESC).
CREATE INDEX asset_workspace_idx ON asset (workspace_id, id DESC);

-- Uploads in flight. A row is written before the first byte goes to the
-- object store and removed in the transaction that writes the asset row (or
-- when the upload fails and its object is deleted), so every object under
-- assets/ is accounted for by an asset or an upload row. Rows a crashed
-- process left behind are purged, objects first, by the purge_asset_uploads
-- sweep. Never visible through the API.
CREATE TABLE asset_upload (
    id            text        PRIMARY KEY,
    workspace_id  text        NOT NULL REFERENCES workspace (id),
    object_key    text        NOT NULL UNIQUE,
    created_by_id text        NOT NULL REFERENCES principal (id),
    started_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX asset_upload_started_idx ON asset_upload (started_at);

-- +goose Down
DROP TABLE asset_upload;
DROP TABLE asset;
