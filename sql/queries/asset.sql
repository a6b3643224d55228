-- name: AssetUploadBegin :exec
INSERT INTO asset_upload (id, workspace_id, object_key, created_by_id)
VALUES (@id, @workspace_id, @object_key, @created_by_id);

-- name: AssetUploadFinish :one
-- Ends an upload in the transaction that writes its asset. No row means the
-- upload was purged as stale meanwhile, and its object with it.
DELETE FROM asset_upload WHERE id = @id AND workspace_id = @workspace_id
RETURNING *;

-- name: AssetUploadDelete :execrows
DELETE FROM asset_upload WHERE id = @id;

-- name: AssetUploadClaimStale :many
-- Uploads that started more than older_than_seconds ago, locked until the
-- purging transaction ends, so that an upload finishing at the same moment
-- waits and then finds its row gone.
SELECT * FROM asset_upload
WHERE started_at < now() - make_interval(secs => @older_than_seconds::float8)
ORDER BY started_at
LIMIT @batch
FOR UPDATE SKIP LOCKED;

-- name: AssetInsert :one
INSERT INTO asset (id, workspace_id, name, content_type, size, sha256, object_key, created_by_id, updated_by_id)
VALUES (@id, @workspace_id, @name, @content_type, @size, @sha256, @object_key, @created_by_id, @created_by_id)
RETURNING *;

-- name: AssetGet :one
SELECT * FROM asset WHERE workspace_id = @workspace_id AND id = @id;

-- name: AssetGetForUpdate :one
SELECT * FROM asset WHERE workspace_id = @workspace_id AND id = @id
FOR NO KEY UPDATE;

-- name: AssetGetForShare :one
-- A new reference to an asset: FOR SHARE conflicts with a retire (FOR NO KEY
-- UPDATE), so a concurrent retire either lands first and is seen, or waits
-- until the referencing transaction ends.
SELECT * FROM asset WHERE workspace_id = @workspace_id AND id = @id
FOR SHARE;

-- name: AssetList :many
SELECT * FROM asset
WHERE workspace_id = @workspace_id AND id < @after_id
ORDER BY id DESC
LIMIT @page_limit;

-- name: AssetRetire :one
UPDATE asset
SET retired_at = now(), updated_by_id = @updated_by_id, version = version + 1, updated_at = now()
WHERE id = @id
RETURNING *;
