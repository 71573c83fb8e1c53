-- depends: 0015_best_available
-- The currency of a showtime's prices (ISO 4217, upper case): in the seat map, what's on, the bookings and the
-- events that carry money (SeatsHeld, BookingConfirmed: append_seat_map_events, sql/schema.sql).
--
-- An expand step (docs/deployment.md, "Upgrades"): the column is nullable, so the previous release, which does
-- not know it, keeps creating showtimes while its pods still serve; the new release writes CURRENCY (or the
-- showtime's own) on every showtime it creates, and its sweeper gives the rows left without one the deployment's
-- CURRENCY (the partial index finds them at once). A later release may make it NOT NULL (the contract step).
ALTER TABLE showtime ADD COLUMN currency TEXT CHECK (currency ~ '^[A-Z]{3}$');
CREATE INDEX showtime_without_currency ON showtime (showtime_id) WHERE currency IS NULL;
