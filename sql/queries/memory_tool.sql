-- name: MemoryToolList :many
-- The memories of the workspace among the ids an agent lists, with the state
-- of their provider (record memories only). Like every query of the memory
-- toolset (internal/tool/memory), it is scoped by workspace, so a memory or
-- record of another workspace is never reached.
SELECT m.id, m.kind, m.name, m.description, m.namespace, m.provider_id,
       p.type AS provider_type, p.enabled AS provider_enabled
FROM memory m LEFT JOIN provider p ON p.id = m.provider_id AND p.workspace_id = m.workspace_id
WHERE m.workspace_id = @workspace_id AND m.id = ANY (@ids::text[])
ORDER BY m.id;

-- name: MemoryToolTarget :one
-- One memory of the workspace as a call needs it now: its kind and, for a
-- record memory, its namespace and its provider's current configuration and
-- sealed credential.
SELECT m.id, m.kind, m.name, m.namespace, m.provider_id,
       p.type AS provider_type, p.enabled AS provider_enabled, p.config AS provider_config,
       p.credential AS provider_credential
FROM memory m LEFT JOIN provider p ON p.id = m.provider_id AND p.workspace_id = m.workspace_id AND p.kind = 'memory'
WHERE m.workspace_id = @workspace_id AND m.id = @id;

-- name: MemoryRecordInsert :exec
INSERT INTO memory_record (id, workspace_id, memory_id, content, metadata)
VALUES (@id, @workspace_id, @memory_id, @content, @metadata);

-- name: MemoryRecordGet :one
SELECT id, content, metadata, created_at FROM memory_record
WHERE workspace_id = @workspace_id AND memory_id = @memory_id AND id = @id;

-- name: MemoryRecordQueryHasLexemes :one
-- Whether the query text makes a full-text query with at least one lexeme;
-- one with none (only punctuation, say) matches nothing and is searched with
-- MemoryRecordSearchSubstring instead.
SELECT numnode(websearch_to_tsquery('simple', @query::text)) > 0 AS has_lexemes;

-- name: MemoryRecordList :many
-- A page of a builtin memory's records, newest first (ids are ULIDs), after
-- the id a cursor names; memory_record_memory_idx serves it.
SELECT r.id, r.content, r.metadata, r.created_at
FROM memory_record r
WHERE r.workspace_id = @workspace_id AND r.memory_id = @memory_id AND r.id < @after_id
ORDER BY r.id DESC
LIMIT @max_records;

-- name: MemoryRecordSearchText :many
-- Full-text search of a builtin memory's records, best first, after the
-- (score, id) a cursor names: a first page passes 'Infinity' and an id that
-- sorts after every id. ts_rank of one content and query is always the same
-- real, so a cursor's score is found again exactly.
SELECT id, content, metadata, created_at, score
FROM (
    SELECT r.id, r.content, r.metadata, r.created_at,
           ts_rank(to_tsvector('simple', r.content), websearch_to_tsquery('simple', @query::text))::real AS score
    FROM memory_record r
    WHERE r.workspace_id = @workspace_id AND r.memory_id = @memory_id
      AND to_tsvector('simple', r.content) @@ websearch_to_tsquery('simple', @query::text)
) hits
WHERE (score, id) < (@after_score::real, @after_id::text)
ORDER BY score DESC, id DESC
LIMIT @max_records;

-- name: MemoryRecordSearchSubstring :many
-- Records of a builtin memory holding the pattern (an ILIKE pattern whose
-- wildcards the caller escaped with \), newest first, after the id a cursor
-- names.
SELECT r.id, r.content, r.metadata, r.created_at
FROM memory_record r
WHERE r.workspace_id = @workspace_id AND r.memory_id = @memory_id
  AND r.content ILIKE @pattern::text AND r.id < @after_id
ORDER BY r.id DESC
LIMIT @max_records;

-- name: MemoryRecordRecall :many
-- Records of a builtin memory that share a word, or a word's beginning, with
-- a run's input (@query is a tsquery: 'word':* | 'other':* ...), best first:
-- what the memories' context recalls when a run begins.
SELECT r.id, r.content, r.metadata, r.created_at,
       ts_rank(to_tsvector('simple', r.content), to_tsquery('simple', @query::text))::real AS score
FROM memory_record r
WHERE r.workspace_id = @workspace_id AND r.memory_id = @memory_id
  AND to_tsvector('simple', r.content) @@ to_tsquery('simple', @query::text)
ORDER BY score DESC, r.id DESC
LIMIT @max_records;
