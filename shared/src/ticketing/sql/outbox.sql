-- name: insert_outbox
-- Append one event to the outbox inside the caller's transaction; wake the relay on commit. An event id
-- already there is the same event made again (ids derived from their cause): kept once.
WITH row AS (
    INSERT INTO outbox (event_id, topic, message_key, payload, headers)
    VALUES ($1, $2, $3, $4, $5::text::jsonb)
    ON CONFLICT (event_id) DO NOTHING
    RETURNING id
)
SELECT pg_notify(current_schema() || '_outbox', '') FROM row;

-- name: claim_batch
-- Up to $1 rows in line, oldest first, with ids above $2 (0: every row in line); the rows $3, which the
-- broker acknowledged, are marked published by the same statement (ticketing/relay/pump.py). Its claim does
-- not see those marks, which is why the relay asks for ids above the batch it has in flight. Ids are no
-- high-water mark: a row committed late by a long transaction (with a lower id) is found by the next claim
-- from 0. Quarantined rows are left out, and so is every later row of their key (same topic and message
-- key): per-key order is kept (ticketing/relay/batches.py). Nothing at or after the oldest pending row (one its
-- service still completes: migration 0902) goes out yet. No row lock: one relay leads per schema
-- (try_relay_lock), and a lock would last only this statement.
WITH marked AS (
    UPDATE outbox SET published_at = clock_timestamp() WHERE id = ANY($3::bigint[])
)
SELECT id, topic, message_key, payload, headers::text AS headers
FROM outbox o
WHERE published_at IS NULL AND quarantined_at IS NULL AND id > $2
  AND id < coalesce((SELECT min(id) FROM outbox WHERE pending), 9223372036854775807)
  AND NOT EXISTS (SELECT FROM outbox q
                  WHERE q.quarantined_at IS NOT NULL AND q.topic = o.topic
                    AND q.message_key = o.message_key AND q.id < o.id)
ORDER BY id
LIMIT $1;

-- name: mark_published
-- Only rows the broker acknowledged.
UPDATE outbox SET published_at = clock_timestamp() WHERE id = ANY($1::bigint[]);

-- name: quarantine
-- Set aside rows Kafka refused for good ($1 ids, $2 the refusals): kept unpublished with the error and
-- the time; claim_batch skips them and holds back the later rows of their key.
UPDATE outbox SET quarantined_at = clock_timestamp(), quarantine_error = refused.error
FROM unnest($1::bigint[], $2::text[]) AS refused (id, error)
WHERE outbox.id = refused.id;

-- name: quarantined
-- The operator's list: rows in quarantine, oldest first, with how many rows of their key wait behind them.
SELECT q.id, q.event_id, q.topic, q.message_key, length(q.payload) AS payload_bytes, q.created_at,
       q.quarantined_at, q.quarantine_error,
       (SELECT count(*) FROM outbox w
        WHERE w.published_at IS NULL AND w.quarantined_at IS NULL AND w.topic = q.topic
          AND w.message_key = q.message_key AND w.id > q.id) AS held_behind
FROM outbox q
WHERE q.quarantined_at IS NOT NULL
ORDER BY q.id;

-- name: outbox_row
-- One row's state, for `ticketing outbox replay` (and its --dry-run).
SELECT id, topic, message_key, published_at, quarantined_at, quarantine_error
FROM outbox WHERE id = $1;

-- name: replay
-- Put a quarantined row back in line and wake the relay; it goes out before the rows held behind it
-- (lower id). A row not in quarantine is left as it is: replaying twice is replaying once.
WITH replayed AS (
    UPDATE outbox SET quarantined_at = NULL
    WHERE id = $1 AND quarantined_at IS NOT NULL
    RETURNING id
)
SELECT id, pg_notify(current_schema() || '_outbox', '') FROM replayed;

-- name: delete_published_before
-- Housekeeping: published rows older than the retention.
DELETE FROM outbox WHERE published_at < now() - make_interval(secs => $1);

-- name: unpublished_count
-- Relay lag, for metrics and tests: rows waiting (held-back rows included: they are committed facts not
-- yet delivered), the oldest of them, and the rows in quarantine (not lag: they wait for an operator).
SELECT count(*) FILTER (WHERE quarantined_at IS NULL) AS n,
       min(created_at) FILTER (WHERE quarantined_at IS NULL) AS oldest,
       count(*) FILTER (WHERE quarantined_at IS NOT NULL) AS quarantined
FROM outbox WHERE published_at IS NULL;

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

-- name: outbox_status
-- For operators: rows waiting for the relay, the age of the oldest, how many of them wait for their seat-map
-- versions (hold-service's pending rows: the relay publishes nothing at or after the first), rows in quarantine,
-- rows published (kept a day after publishing).
SELECT count(*) FILTER (WHERE published_at IS NULL AND quarantined_at IS NULL) AS waiting,
       extract(epoch FROM now() - min(created_at) FILTER (WHERE published_at IS NULL AND quarantined_at IS NULL))
           AS oldest_seconds,
       count(*) FILTER (WHERE published_at IS NULL AND quarantined_at IS NULL AND pending) AS unnumbered,
       count(*) FILTER (WHERE quarantined_at IS NOT NULL) AS quarantined,
       count(*) FILTER (WHERE published_at IS NOT NULL) AS published
FROM outbox;

-- name: inbox_status
-- For operators: per consumer, the events processed and when the last one was.
SELECT consumer, count(*) AS processed, max(processed_at) AS last_processed_at
FROM processed_event GROUP BY consumer ORDER BY consumer;
