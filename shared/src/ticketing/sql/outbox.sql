-- name: insert_outbox
-- Append one event to the outbox inside the caller's transaction; wake the relay on commit.
WITH row AS (
    INSERT INTO outbox (event_id, topic, message_key, payload, headers)
    VALUES ($1, $2, $3, $4, $5::text::jsonb)
    RETURNING id
)
SELECT pg_notify(current_schema() || '_outbox', '') FROM row;

-- name: claim_batch
-- Oldest unpublished rows first; ids are not a high-water mark, so a row committed late by a long
-- transaction (with a lower id) is still found on the next pass.
SELECT id, topic, message_key, payload, headers::text AS headers
FROM outbox
WHERE published_at IS NULL
ORDER BY id
LIMIT $1
FOR UPDATE SKIP LOCKED;

-- name: mark_published
-- Only rows the broker acknowledged.
UPDATE outbox SET published_at = clock_timestamp() WHERE id = ANY($1::bigint[]);

-- name: delete_published_before
-- Housekeeping: published rows older than the retention.
DELETE FROM outbox WHERE published_at < now() - make_interval(secs => $1);

-- name: unpublished_count
-- Relay lag, for metrics and tests.
SELECT count(*) AS n, min(created_at) AS oldest FROM outbox WHERE published_at IS NULL;

-- name: try_relay_lock
-- One active relay per service schema: a session-level advisory lock keyed by the schema name.
SELECT pg_try_advisory_lock(hashtext(current_schema() || '.outbox-relay')) AS locked;

-- name: current_schema
-- The schema this connection writes to (the role's search_path).
SELECT current_schema() AS schema;

-- name: mark_processed
-- Inbox: record an event id; returns a row only the first time.
INSERT INTO processed_event (consumer, event_id) VALUES ($1, $2)
ON CONFLICT DO NOTHING
RETURNING event_id;

-- name: mark_processed_many
-- Inbox, batch mode: record many event ids in one statement; returns the ids recorded now (not the
-- ones processed before). Duplicates inside the array are absorbed by ON CONFLICT too.
INSERT INTO processed_event (consumer, event_id)
SELECT $1, unnest($2::uuid[])
ON CONFLICT DO NOTHING
RETURNING event_id;
