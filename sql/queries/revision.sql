-- Heads and revisions of agents and skills (kind 'agent' or 'skill').

-- name: HeadInsert :one
INSERT INTO head (id, workspace_id, kind, name, description, labels, default_revision_id, created_by_id, updated_by_id)
VALUES (@id, @workspace_id, @kind, @name, @description, @labels, @default_revision_id, @created_by_id, @created_by_id)
RETURNING *;

-- name: HeadGet :one
SELECT * FROM head WHERE workspace_id = @workspace_id AND kind = @kind AND id = @id;

-- name: HeadGetForUpdate :one
-- NO KEY UPDATE serializes the head's writers (PATCH, publish, archive)
-- without blocking rows that reference it.
SELECT * FROM head WHERE workspace_id = @workspace_id AND kind = @kind AND id = @id
FOR NO KEY UPDATE;

-- name: HeadGetForShare :one
-- For starting runs: a concurrent archive waits until the run is written, or
-- is seen.
SELECT * FROM head WHERE workspace_id = @workspace_id AND kind = @kind AND id = @id
FOR SHARE;

-- name: HeadList :many
-- Newest first after the cursor. Every filter is optional: an empty selector
-- object matches every head, a null archived or q filters nothing. Run it with
-- custom plans (HeadListPlanCustom) so that the planner sees the actual
-- selectors and pattern and picks the label, trigram or id index to suit them.
SELECT * FROM head
WHERE workspace_id = @workspace_id AND kind = @kind AND id < @after_id
  AND labels @> @selector::jsonb
  AND (sqlc.narg('archived')::boolean IS NULL OR (archived_at IS NOT NULL) = sqlc.narg('archived')::boolean)
  AND (sqlc.narg('pattern')::text IS NULL OR (name || E'\n' || description) ILIKE sqlc.narg('pattern')::text)
ORDER BY id DESC
LIMIT @page_limit;

-- name: HeadListPlanCustom :exec
-- Plans the transaction's statements for their actual parameters (see HeadList).
SELECT set_config('plan_cache_mode', 'force_custom_plan', true);

-- name: HeadUpdate :one
UPDATE head
SET name = @name, description = @description, labels = @labels, default_revision_id = @default_revision_id,
    updated_by_id = @updated_by_id, version = version + 1, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: HeadPublished :one
-- A revision was added: the latest number moves, and the default when asked.
UPDATE head
SET latest_revision_number = @latest_revision_number, default_revision_id = @default_revision_id,
    updated_by_id = @updated_by_id, version = version + 1, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: HeadSetArchived :one
UPDATE head
SET archived_at = CASE WHEN @archive::boolean THEN now() END, updated_by_id = @updated_by_id, version = version + 1, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: HeadsForReference :many
-- Heads of one kind that a configuration names, to check they exist in the
-- workspace and are not archived. FOR SHARE conflicts with archive (FOR NO KEY
-- UPDATE), so a concurrent archive is seen or waits; locked in id order.
SELECT id, archived_at FROM head
WHERE workspace_id = @workspace_id AND kind = @kind AND id = ANY(@ids::text[])
ORDER BY id
FOR SHARE;

-- name: HeadsByID :many
-- The heads of one kind among ids in the workspace, archived or not: what a
-- run reads of the subagents its configuration names.
SELECT * FROM head
WHERE workspace_id = @workspace_id AND kind = @kind AND id = ANY(@ids::text[]);

-- name: RevisionInsert :one
INSERT INTO revision (id, head_id, number, config, content_hash, created_by_id)
VALUES (@id, @head_id, @number, @config, @content_hash, @created_by_id)
RETURNING *;

-- name: RevisionGet :one
-- A revision of a head of the workspace; another head's revision is not found.
SELECT r.* FROM revision r JOIN head h ON h.id = r.head_id
WHERE h.workspace_id = @workspace_id AND h.kind = @kind AND h.id = @head_id AND r.id = @id;

-- name: RevisionGetOfHead :one
-- A revision of a head already read within the workspace.
SELECT * FROM revision WHERE head_id = @head_id AND id = @id;

-- name: RevisionsPinned :many
-- Revisions of heads of one kind of the workspace, with their heads' names:
-- what an attempt reads of the agent revision and the skill revisions its
-- run pinned, in one read.
SELECT r.head_id, h.name, r.id, r.config FROM revision r JOIN head h ON h.id = r.head_id
WHERE h.workspace_id = @workspace_id AND h.kind = @kind AND r.id = ANY(@ids::text[]);

-- name: RevisionList :many
-- Newest (highest number) first after the cursor.
SELECT * FROM revision
WHERE head_id = @head_id AND number < @before_number
ORDER BY number DESC
LIMIT @page_limit;

-- name: RevisionsOfHeads :many
-- Which of the given revision ids belong to which head (skill pins).
SELECT id, head_id FROM revision WHERE id = ANY(@ids::text[]);

-- name: ModelForReference :one
-- A model a configuration names, with its provider's state. FOR SHARE of the
-- model and its provider conflicts with their PATCH (FOR NO KEY UPDATE), so a
-- concurrent disable of either is seen or waits.
SELECT m.key, m.enabled, p.enabled AS provider_enabled
FROM model m JOIN provider p ON p.id = m.provider_id
WHERE m.workspace_id = @workspace_id AND m.key = @key
FOR SHARE OF m, p;

-- name: WebProviderForReference :one
-- A provider a configuration's web toolset names, locked FOR SHARE like a
-- model's provider.
SELECT id, kind, type, enabled FROM provider
WHERE workspace_id = @workspace_id AND id = @id
FOR SHARE;
