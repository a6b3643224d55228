-- +goose Up
-- A model's context window in tokens (null: the provider type's default
-- for the model's name, or unknown), which runs fit their conversation
-- into (docs/decisions/0051-context-fitting.md).
ALTER TABLE model ADD COLUMN context_window integer CHECK (context_window BETWEEN 1024 AND 100000000);

-- A run starts from the thread's latest summary of its older messages:
-- its newest context.compacted event.
CREATE INDEX thread_event_compacted_idx ON thread_event (thread_id, seq DESC) WHERE type = 'context.compacted';

-- +goose Down
DROP INDEX thread_event_compacted_idx;
ALTER TABLE model DROP COLUMN context_window;
