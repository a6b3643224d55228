-- name: AuditEventInsert :exec
INSERT INTO audit_event (id, organization_id, workspace_id, actor_id, action, subject_type, subject_id, version, changed_fields, request_id)
VALUES (@id, sqlc.narg('organization_id'), sqlc.narg('workspace_id'), sqlc.narg('actor_id'), @action, @subject_type, @subject_id,
        sqlc.narg('version'), @changed_fields::text[], sqlc.narg('request_id'));

-- AuditEventListByWorkspace lists a workspace's trail, newest first, with
-- optional filters that all apply. Run with custom plans when a filter is
-- given (AuditEventListPlanCustom), so that a subject's events are read
-- through audit_event_subject_idx.
-- name: AuditEventListByWorkspace :many
SELECT * FROM audit_event
WHERE workspace_id = @workspace_id AND id < @after_id
  AND (sqlc.narg('actor_id')::text IS NULL OR actor_id = sqlc.narg('actor_id')::text)
  AND (sqlc.narg('action')::text IS NULL OR action = sqlc.narg('action')::text)
  AND (sqlc.narg('subject_id')::text IS NULL OR subject_id = sqlc.narg('subject_id')::text)
  AND (sqlc.narg('since')::timestamptz IS NULL OR created_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR created_at < sqlc.narg('until')::timestamptz)
ORDER BY id DESC
LIMIT @page_limit;

-- name: AuditEventListPlanCustom :exec
-- Plans the transaction's statements for their actual parameters.
SELECT set_config('plan_cache_mode', 'force_custom_plan', true);
