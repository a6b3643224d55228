-- +goose Up
-- Subagent delegation bounds (docs/decisions/0037-delegation-bounds-run-deadline-and-stray-checkpoints.md): every
-- run names the root of its tree of delegations (NULL for a root) and its
-- depth in it (0 for a root, a parent's depth plus one for a child), so a
-- child's start counts the root's descendants, live and in all, with one
-- index, and refuses a delegation deeper than the limit.
ALTER TABLE run ADD COLUMN root_run_id text REFERENCES run (id);
ALTER TABLE run ADD COLUMN depth integer NOT NULL DEFAULT 0;
CREATE INDEX run_root_idx ON run (root_run_id, finished_at) WHERE root_run_id IS NOT NULL;

WITH RECURSIVE tree AS (
    SELECT id, id AS root, 0 AS depth FROM run WHERE parent_run_id IS NULL
    UNION ALL
    SELECT c.id, tree.root, tree.depth + 1 FROM run c JOIN tree ON c.parent_run_id = tree.id
)
UPDATE run SET root_run_id = tree.root, depth = tree.depth
FROM tree
WHERE run.id = tree.id AND tree.depth > 0;

-- +goose Down
DROP INDEX run_root_idx;
ALTER TABLE run DROP COLUMN depth;
ALTER TABLE run DROP COLUMN root_run_id;
