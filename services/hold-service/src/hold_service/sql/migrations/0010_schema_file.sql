-- depends: 0009_seat_updates_in_place 0901_schema_file
-- The functions and triggers now live in sql/schema.sql, applied after the migrations (ticketing.migrations).
-- The seat-map writers there take the event's envelope and headers from the event catalogue (`form`) and
-- the cause headers of each change (`caused_by`: x-request-id and traceparent) as arguments; their older
-- signatures go, so that only what the file defines is left (IF EXISTS: a database migrated since migrations
-- 0004-0008 left their definitions to the file never had them).
DROP FUNCTION IF EXISTS append_seat_map_events(BIGINT, JSONB[]);
DROP FUNCTION IF EXISTS seat_map_change(TEXT, UUID, BIGINT, JSONB);
DROP FUNCTION IF EXISTS release_hold(UUID, TEXT);
DROP FUNCTION IF EXISTS confirm_hold(UUID, UUID, INT);
