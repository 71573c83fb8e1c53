-- The conditional hold UPDATE of hold-service (sql/holds.sql take_seats: the source of truth of a hold), two
-- adjacent seats of one showtime's 300, each transaction alone and synchronously committed. Holds last 2 ms,
-- so seats keep coming free (lazy expiry) and most UPDATEs write, as in a sale.
\set n random(1, 300)
\set m (:n % 300) + 1
UPDATE show_seat
SET status = 'HELD', hold_id = gen_random_uuid(), customer_id = :n,
    hold_expires_at = now() + make_interval(secs => 0.002), booking_id = gen_random_uuid()
WHERE showtime_id = :sid AND seat_code = ANY(ARRAY['S' || :n, 'S' || :m]) AND seat_is_free(status, hold_expires_at);
