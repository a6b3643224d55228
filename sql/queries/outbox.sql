-- name: OutboxInsert :exec
INSERT INTO outbox (id, kind, workspace_id, payload, sealed)
VALUES (@id, @kind, sqlc.narg('workspace_id'), @payload, sqlc.narg('sealed'));
