-- Subagent delegation bounds (internal/run/subagent_bounds.go).

-- SubagentTreeLock serialises, until the transaction ends, the starts of
-- children in the tree of root run root_run_id, so the counts read next
-- stay true until the new child is written: two calls cannot both take the
-- last slot. Only child starts take it.
-- name: SubagentTreeLock :exec
SELECT pg_advisory_xact_lock(hashtextextended('svc.subagent_tree:' || @root_run_id::text, 0));

-- SubagentTreeCounts counts the descendants of root run root_run_id: those
-- not finished, and all.
-- name: SubagentTreeCounts :one
SELECT count(*) FILTER (WHERE finished_at IS NULL)::int AS live, count(*)::int AS total
FROM run WHERE root_run_id = @root_run_id;

