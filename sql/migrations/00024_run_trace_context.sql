-- +goose Up
-- The W3C trace context (traceparent, tracestate) of the request that posted
-- an input, and of the run started for it: a run's attempts continue that
-- trace (docs/decisions/0059-tracing.md). Null when tracing was off.
ALTER TABLE thread_input
    ADD COLUMN traceparent text CHECK (char_length(traceparent) = 55),
    ADD COLUMN tracestate  text CHECK (char_length(tracestate) <= 512);
ALTER TABLE run
    ADD COLUMN traceparent text CHECK (char_length(traceparent) = 55),
    ADD COLUMN tracestate  text CHECK (char_length(tracestate) <= 512);

-- +goose Down
ALTER TABLE run DROP COLUMN traceparent, DROP COLUMN tracestate;
ALTER TABLE thread_input DROP COLUMN traceparent, DROP COLUMN tracestate;
