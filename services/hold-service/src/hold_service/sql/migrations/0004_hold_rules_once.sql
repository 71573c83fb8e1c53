-- depends: 0003_customer_cap_at_commit
-- Each hold rule stated once, as SQL functions that the named queries of sql/holds.sql call:
--
-- - hold_expired / seat_is_free: lazy expiry. A hold is over when its time has passed by Postgres' clock,
--   and its seats are then free for anyone; no job is needed for correctness.
-- - seats_held: what the per-customer cap counts (seats a customer holds now on a showtime).
-- - append_seat_map_events: changes of a showtime's seat map. Each takes the next seatMapVersion (the
--   showtime's row stays locked to the end of the transaction, so versions are one per change, gapless, in
--   commit order) and its booking-events message (docs/events) goes to the outbox, built here where
--   every value is known. Writers call it last in their one statement, so the showtime's row, which every
--   hold of the showtime contends on, is locked only for the statement's tail and its COMMIT.
-- - release_hold / confirm_hold: the end of a hold, for the customer's cancel, the sweeper and payments.
--
-- Replaces migration 0002 (a placeholder in a payload, patched with the version at COMMIT).
--
-- Those functions are sql/schema.sql's now, applied after the migrations (migration 0010 dropped the signatures
-- this migration made on the databases it ran on first); this migration keeps only what it did to the tables.

DROP TRIGGER seat_map_stamp_at_commit ON seat_map_stamp;
DROP FUNCTION stamp_seat_map_version();
DROP TABLE seat_map_stamp;

-- An Idempotency-Key now keeps the domain outcome (the hold, or the seats that were unavailable), not an
-- HTTP body; keys stored before cannot be read that way and are dropped (at most a day of retries).
DELETE FROM idempotency_key;
ALTER TABLE idempotency_key DROP COLUMN status_code;
ALTER TABLE idempotency_key RENAME COLUMN body TO outcome;
