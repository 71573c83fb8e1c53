-- depends: 0017_customer_identities
-- transactional: false
-- The per-customer cap counts a customer's holds of one showtime through an index of (customer, showtime) that
-- every booking is in, in place of the partial index of HELD bookings.
--
-- The count (seats_held, sql/schema.sql) runs at every hold's COMMIT with a plan made once per connection. When
-- the statistics said that few bookings were HELD (the quiet hours before a sale opens), three partial indexes
-- of HELD bookings looked equally cheap, and PostgreSQL could pick booking_held_expiry or booking_live_by_showtime:
-- a scan of every hold in the database, or of the showtime, at each hold's COMMIT, while the rush made thousands
-- of them. The count now tests the status after the lookup, so no partial index applies, and the plan is the
-- customer's bookings of the showtime whatever the statistics say.
--
-- CONCURRENTLY, outside a transaction (yoyo's `transactional: false`): holds and payments go on while the index is
-- built over a chain's bookings. A build that failed leaves an invalid index behind; the next run drops it first.
DROP INDEX CONCURRENTLY IF EXISTS booking_by_customer_showtime;
CREATE INDEX CONCURRENTLY booking_by_customer_showtime ON booking (customer_id, showtime_id);
DROP INDEX CONCURRENTLY IF EXISTS booking_active_by_customer;
