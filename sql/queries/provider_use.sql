-- name: ProviderForUse :one
-- The provider a resource is put on (an environment template, a record
-- memory). FOR SHARE conflicts with the provider's own PATCH (FOR NO KEY
-- UPDATE), so a concurrent disable either lands first and is seen, or waits
-- until the resource is written.
SELECT id, kind, type, enabled FROM provider
WHERE workspace_id = @workspace_id AND id = @id
FOR SHARE;

-- name: ProviderTypeOf :one
-- The kind and type of a provider the caller's resource already sits on.
SELECT kind, type FROM provider WHERE workspace_id = @workspace_id AND id = @id;

-- name: ProviderEnabled :one
-- Whether a provider a run's tool calls is still enabled, checked at every call.
SELECT enabled FROM provider WHERE workspace_id = @workspace_id AND id = @id;
