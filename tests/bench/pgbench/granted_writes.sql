-- What a granted hold writes, and nothing else (make bench-granted's "writes" phase): the seat's conditional UPDATE
-- (tests/bench/pgbench/granted_bare.sql's), a booking row and an outbox row with an event of a SeatsHeld's size,
-- in one transaction sent in one round trip. No decision, no cap, no event built: the floor under any statement
-- that writes a hold as take_seats (sql/holds.sql) does. The booking is written even when the seat was drawn
-- before and its UPDATE found it taken, so this phase's bookings are not checked for seats held twice.
-- The outbox row is pending and names the phase's showtime, as a hold's does: the service's numberer numbers
-- it, and the bench's cleanup (bench_holds.forget_events) finds it by that showtime and removes it.
\set k random(0, :pool - 1)
\set a (:k / 1000) / 26
\set b (:k / 1000) % 26
\set num :k % 1000 + 1
\set customer random(1, 1000000000000)
\startpipeline
BEGIN;
UPDATE show_seat
SET status = 'HELD', hold_id = gen_random_uuid(), customer_id = :customer,
    hold_expires_at = now() + make_interval(secs => 600), booking_id = gen_random_uuid()
WHERE showtime_id = :sid AND seat_code = chr(65 + :a::int) || chr(65 + :b::int) || :num::int
  AND seat_is_free(status, hold_expires_at);
INSERT INTO booking (hold_id, booking_id, customer_id, showtime_id, seats, amount_cents, status, expires_at, tickets)
VALUES (gen_random_uuid(), gen_random_uuid(), :customer, :sid, ARRAY[chr(65 + :a::int) || chr(65 + :b::int) || :num::int],
        1000, 'HELD', now() + interval '10 minutes',
        '[{"seat": "AA1", "category": "STANDARD", "ticketType": "ADULT", "priceCents": 1000}]');
INSERT INTO outbox (event_id, topic, message_key, payload, headers, pending)
VALUES (gen_random_uuid(), 'booking-events', gen_random_uuid()::text,
        convert_to('{"eventId": "4b0e4d9f-8a3c-4d3c-9a4f-2b1e8c0a7d11", "type": "SeatsHeld", "occurredAt": "2026-12-07T05:00:00.000000Z", "bookingId": "4b0e4d9f-8a3c-4d3c-9a4f-2b1e8c0a7d11", "showtimeId": ' || :sid || ', "customerId": 1, "data": {"holdId": "4b0e4d9f-8a3c-4d3c-9a4f-2b1e8c0a7d11", "seats": ["AA1"], "expiresAt": "2026-12-07T05:10:00.000000Z", "amountCents": 1000, "currency": "EUR"}}', 'UTF8'),
        '[["type", "SeatsHeld"], ["x-request-id", "0123456789abcdef0123456789abcdef"]]', true);
COMMIT;
\endpipeline
