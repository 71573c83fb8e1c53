-- depends: 0002_seat_map_version_at_commit
-- The cap on seats one customer holds at once on one showtime (OWASP "denial of inventory"), made exact
-- at COMMIT so that a hold needs no transaction of its own.
--
-- take_seats checks the cap against the customer's live holds, but a statement reads a snapshot taken
-- when it started: two holds of one customer running at once would each miss the other. This deferred
-- trigger settles that race: it takes the customer's advisory lock for the showtime (held to the end
-- of the transaction, so the same customer's holds commit one after the other) and counts again with a
-- fresh snapshot (each statement of a function does), this hold included. Over the cap: the commit
-- fails with SQLSTATE HL429 and nothing of the hold is written. The cap in force is kept on the booking.
--
-- The trigger and its function (check_customer_seat_cap, booking_customer_cap_at_commit) are sql/schema.sql's,
-- applied after the migrations; this migration made them first, and keeps only its column here.

ALTER TABLE booking ADD COLUMN seat_cap INT;
