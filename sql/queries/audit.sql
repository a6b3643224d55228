-- name: AuditEventInsert :exec
INSERT INTO audit_event (id, organization_id, workspace_id, actor_id, action, subject_type, subject_id, version, changed_fields, request_id)
VALUES (@id, sqlc.narg('organization_id'), sqlc.narg('workspace_id'), sqlc.narg('actor_id'), @action, @subject_type, @subject_id,
        sqlc.narg('version'), @changed_fields::text[], sqlc.narg('request_id'));

-- name: AuditEventListByWorkspace :many
SELECT * FROM audit_event
WHERE workspace_id = @workspace_id AND id < @after_id
ORDER BY id DESC
LIMIT @page_limit;
