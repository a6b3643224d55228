-- +goose Up
-- Agents and skills: revisioned resources
-- (docs/decisions/0020-agents-and-skills.md). Both
-- kinds share one shape, so they share these tables: a head (name, description,
-- labels, the default revision, archived or not) plus immutable numbered
-- revisions holding the configuration. Heads are never deleted, and
-- revisions are never changed or deleted: runs pin them.

-- Trigram indexes serve the lists' case-insensitive substring search (q). The
-- extension ships with Debian's PostgreSQL server package and is trusted, so a
-- database owner may create it. IF NOT EXISTS: environment templates use it too.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE head (
    id                     text        PRIMARY KEY,
    workspace_id           text        NOT NULL REFERENCES workspace (id),
    kind                   text        NOT NULL CHECK (kind IN ('agent', 'skill')),
    name                   text        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    description            text        NOT NULL DEFAULT '' CHECK (char_length(description) <= 2000),
    labels                 jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(labels) = 'object'),
    -- The revision new runs use without a pin; always one of this head's.
    default_revision_id    text        NOT NULL,
    -- The number of the newest revision; the next one gets this + 1.
    latest_revision_number integer     NOT NULL DEFAULT 1 CHECK (latest_revision_number >= 1),
    archived_at            timestamptz,
    version                integer     NOT NULL DEFAULT 1,
    created_by_id          text        NOT NULL REFERENCES principal (id),
    updated_by_id          text        NOT NULL REFERENCES principal (id),
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    CHECK (starts_with(id, CASE kind WHEN 'agent' THEN 'ap_' ELSE 'sk_' END))
);

CREATE TABLE revision (
    id            text        PRIMARY KEY,
    head_id       text        NOT NULL REFERENCES head (id),
    number        integer     NOT NULL CHECK (number >= 1),
    -- The normalized configuration (every member present, defaults applied).
    config        jsonb       NOT NULL CHECK (jsonb_typeof(config) = 'object'),
    -- sha256 of the canonical JSON of config: publishing content identical to
    -- the default revision is decided on it.
    content_hash  text        NOT NULL CHECK (content_hash ~ '^sha256:[0-9a-f]{64}$'),
    created_by_id text        NOT NULL REFERENCES principal (id),
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (head_id, number),
    UNIQUE (head_id, id)
);

-- The default revision belongs to its head. Deferred: a create writes the head
-- (naming revision 1) before revision 1 itself, in one transaction.
ALTER TABLE head ADD CONSTRAINT head_default_revision_fkey
    FOREIGN KEY (id, default_revision_id) REFERENCES revision (head_id, id)
    DEFERRABLE INITIALLY DEFERRED;

-- Lists are per workspace and kind, newest first (keyset on id DESC).
CREATE INDEX head_workspace_kind_idx ON head (workspace_id, kind, id DESC);
-- label=key:value selectors are `labels @> {...}`; jsonb_path_ops is the
-- smaller, faster GIN operator class for containment.
CREATE INDEX head_labels_idx ON head USING gin (labels jsonb_path_ops);
-- The planner estimates `labels @> {...}` by testing the selectors against the
-- column's histogram of whole label objects. With the default 100 entries it
-- cannot see below about 1 %, so a selector matching 0.4 % of a workspace's
-- heads looked common enough to walk the id index and filter (16,000 rows
-- for one page); 1000 entries resolve 0.1 % and send such lists to the label
-- index (docs/performance.md, "Agents and skills").
ALTER TABLE head ALTER COLUMN labels SET STATISTICS 1000;
-- q is a case-insensitive substring of name or description. The newline
-- joining them cannot occur in q (control characters are refused), so a match
-- never straddles the two.
CREATE INDEX head_text_trgm_idx ON head USING gin ((name || E'\n' || description) gin_trgm_ops);

-- +goose Down
DROP TABLE revision, head;
