-- depends: 0901_schema_file
-- Outbox rows a service completes after their COMMIT: `pending` rows are committed facts whose payload still
-- lacks a part only the order of commits can give. hold-service writes its seat-map events so and numbers
-- them (seatMapVersion) in a short transaction of its own afterwards (its sql/schema.sql,
-- number_seat_map_changes), so that a hold does not keep its showtime's row locked through its COMMIT.
-- The relay publishes nothing at or after the oldest pending row (sql/outbox.sql claim_batch): the order of
-- the rows is kept, and a pending row waits only for the next numbering (a tenth of a second).
--
-- A column with a constant default: no table rewrite, a short lock only, safe under a running relay.

ALTER TABLE outbox ADD COLUMN pending BOOLEAN NOT NULL DEFAULT false;

-- Holds only the rows still to complete: usually none, so the relay's look-up costs nearly nothing.
CREATE INDEX outbox_pending ON outbox (id) WHERE pending;
