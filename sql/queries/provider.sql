-- name: ProviderInsert :one
INSERT INTO provider (id, workspace_id, kind, type, name, config, credential, extra_headers,
                      extra_header_names, created_by_id, updated_by_id)
VALUES (@id, @workspace_id, @kind, @type, @name, @config, @credential, @extra_headers,
        @extra_header_names::text[], @created_by_id, @created_by_id)
RETURNING *;

-- name: ProviderGet :one
SELECT * FROM provider WHERE workspace_id = @workspace_id AND kind = @kind AND id = @id;

-- name: ProviderGetForUpdate :one
-- NO KEY UPDATE: serializes writers of the row without blocking rows that will
-- reference it (models), which take KEY SHARE.
SELECT * FROM provider WHERE workspace_id = @workspace_id AND kind = @kind AND id = @id
FOR NO KEY UPDATE;

-- name: ProviderList :many
SELECT * FROM provider
WHERE workspace_id = @workspace_id AND kind = @kind AND id < @after_id
ORDER BY id DESC
LIMIT @page_limit;

-- name: ProviderUpdate :one
UPDATE provider
SET name = @name, config = @config, credential = @credential, extra_headers = @extra_headers,
    extra_header_names = @extra_header_names::text[], enabled = @enabled,
    updated_by_id = @updated_by_id, version = version + 1, updated_at = now()
WHERE id = @id
RETURNING *;
