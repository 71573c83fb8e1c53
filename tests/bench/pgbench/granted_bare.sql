-- The floor under a granted hold (make bench-granted): a bare conditional UPDATE of one fresh seat, the kind
-- tests/bench/pgbench/granted_hold.sql replays a whole hold of (the same pool of seats, the same seat numbering
-- and the same free-seat test), its own transaction. No booking, no event, no cap, no reset.
\set k random(0, :pool - 1)
\set a (:k / 1000) / 26
\set b (:k / 1000) % 26
\set num :k % 1000 + 1
\set customer random(1, 1000000000000)
UPDATE show_seat
SET status = 'HELD', hold_id = gen_random_uuid(), customer_id = :customer,
    hold_expires_at = now() + make_interval(secs => 600), booking_id = gen_random_uuid()
WHERE showtime_id = :sid AND seat_code = chr(65 + :a::int) || chr(65 + :b::int) || :num::int
  AND seat_is_free(status, hold_expires_at);
