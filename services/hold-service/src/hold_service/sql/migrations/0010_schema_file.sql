-- depends: 0009_seat_updates_in_place 0901_schema_file
-- The functions and triggers now live in sql/schema.sql, applied after the migrations (ticketing.migrations).
-- The seat-map writers there take the event's envelope and headers from the event catalogue (`form`) and
-- the cause headers of each change (`caused_by`: x-request-id and traceparent) as arguments; their older
-- signatures go, so that only what the file defines is left.
DROP FUNCTION append_seat_map_events(BIGINT, JSONB[]);
DROP FUNCTION seat_map_change(TEXT, UUID, BIGINT, JSONB);
DROP FUNCTION release_hold(UUID, TEXT);
DROP FUNCTION confirm_hold(UUID, UUID, INT);
