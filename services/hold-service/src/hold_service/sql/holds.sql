-- name: insert_showtime
-- Create a showtime; returns nothing when the id already exists.
INSERT INTO showtime (showtime_id, title, starts_at, price_cents)
VALUES ($1, $2, $3, $4)
ON CONFLICT DO NOTHING
RETURNING showtime_id;

-- name: insert_seats
-- The seats of a new showtime, all AVAILABLE.
INSERT INTO show_seat (showtime_id, seat_code)
SELECT $1, unnest($2::text[]);

-- name: get_showtime
-- Price and seat-map version of a showtime.
SELECT showtime_id, price_cents, seat_map_version FROM showtime WHERE showtime_id = $1;

-- name: lock_customer_showtime
-- Serialise one customer's holds on one showtime so the held-seat cap cannot be raced past.
SELECT pg_advisory_xact_lock(hashtextextended($1::bigint::text || ':' || $2::bigint::text, 7));

-- name: price_and_seats_held
-- Price of the showtime and the seats this customer holds on it now (expired holds do not count);
-- no row when the showtime does not exist.
SELECT s.price_cents,
       coalesce(sum(cardinality(b.seats)), 0)::int AS held,
       ceil(extract(epoch FROM min(b.expires_at) - now()))::int AS frees_in
FROM showtime s
LEFT JOIN booking b ON b.customer_id = $1 AND b.showtime_id = s.showtime_id
                   AND b.status = 'HELD' AND b.expires_at >= now()
WHERE s.showtime_id = $2
GROUP BY s.price_cents;

-- name: lock_seats
-- Lock the requested seats in seat-code order (deadlock-free against any other path that does the
-- same) and say which are free; FOR UPDATE returns the latest committed version after a wait.
SELECT seat_code,
       (status = 'AVAILABLE' OR (status = 'HELD' AND hold_expires_at < now())) AS free
FROM show_seat
WHERE showtime_id = $1 AND seat_code = ANY($2::text[])
ORDER BY seat_code
FOR UPDATE;

-- name: hold_seats
-- The source of truth: take the seats only if each is free or its hold has expired (lazy expiry).
UPDATE show_seat
SET status = 'HELD', hold_id = $3, customer_id = $4,
    hold_expires_at = now() + make_interval(secs => $5), booking_id = $6
WHERE showtime_id = $1 AND seat_code = ANY($2::text[])
  AND (status = 'AVAILABLE' OR (status = 'HELD' AND hold_expires_at < now()))
RETURNING hold_expires_at;

-- name: insert_booking
-- The hold itself; expires_at is the seats' hold_expires_at (one clock: Postgres now()).
INSERT INTO booking (hold_id, booking_id, customer_id, showtime_id, seats, amount_cents, status, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, 'HELD', $7);

-- name: bump_version
-- The showtime's seat map changed in this transaction; taken last so the hot row is locked briefly.
UPDATE showtime SET seat_map_version = seat_map_version + 1
WHERE showtime_id = $1
RETURNING seat_map_version;

-- name: get_booking
-- One hold with its lazily derived status (EXPIRED when HELD and past its time).
SELECT hold_id, booking_id, customer_id, showtime_id, seats, amount_cents, expires_at, payment_id,
       CASE WHEN status = 'HELD' AND expires_at < now() THEN 'EXPIRED' ELSE status END AS status
FROM booking WHERE hold_id = $1;

-- name: lock_booking
-- Lock one hold by hold id for a state change; `expired` is decided by Postgres' clock.
SELECT hold_id, booking_id, customer_id, showtime_id, seats, amount_cents, expires_at, payment_id,
       status, (status = 'HELD' AND expires_at < now()) AS expired
FROM booking WHERE hold_id = $1
FOR UPDATE;

-- name: lock_booking_by_booking_id
-- Lock one hold by booking id (events carry the bookingId).
SELECT hold_id, booking_id, customer_id, showtime_id, seats, amount_cents, expires_at, payment_id,
       status, (status = 'HELD' AND expires_at < now()) AS expired
FROM booking WHERE booking_id = $1
FOR UPDATE;

-- name: free_hold_seats
-- Give back the seats this hold still holds (a seat re-held by someone else after expiry is not touched).
UPDATE show_seat
SET status = 'AVAILABLE', hold_id = NULL, customer_id = NULL, hold_expires_at = NULL, booking_id = NULL
WHERE showtime_id = $1 AND seat_code = ANY($2::text[]) AND hold_id = $3 AND status = 'HELD'
RETURNING seat_code;

-- name: set_booking_status
-- Terminal state of a hold.
UPDATE booking SET status = $2, updated_at = now() WHERE hold_id = $1;

-- name: confirm_hold
-- HELD -> BOOKED only if the hold has not expired, seats and booking in one statement.
WITH seats AS (
    UPDATE show_seat SET status = 'BOOKED', hold_expires_at = NULL
    WHERE showtime_id = $1 AND seat_code = ANY($2::text[]) AND hold_id = $3
      AND status = 'HELD' AND hold_expires_at >= now()
    RETURNING seat_code
)
UPDATE booking SET status = 'BOOKED', payment_id = $4, updated_at = now()
WHERE hold_id = $3 AND status = 'HELD' AND expires_at >= now()
  AND (SELECT count(*) FROM seats) = cardinality($2::text[])
RETURNING hold_id;

-- name: claim_expired_holds
-- Sweeper: expired holds nobody else is working on (many sweepers may run).
SELECT hold_id FROM booking
WHERE status = 'HELD' AND expires_at < now()
ORDER BY expires_at
LIMIT $1
FOR UPDATE SKIP LOCKED;

-- name: seat_map
-- The seat map with lazy expiry applied, and its version.
SELECT s.seat_map_version AS version,
       coalesce(json_agg(json_build_object(
           'code', ss.seat_code,
           'status', CASE WHEN ss.status = 'HELD' AND ss.hold_expires_at < now() THEN 'AVAILABLE'
                          ELSE ss.status END)
           ORDER BY ss.seat_code), '[]'::json) AS seats
FROM showtime s LEFT JOIN show_seat ss ON ss.showtime_id = s.showtime_id
WHERE s.showtime_id = $1
GROUP BY s.seat_map_version;

-- name: claim_idempotency_key
-- First use of a key claims it (a concurrent twin waits here until the first commits).
INSERT INTO idempotency_key (customer_id, key, request_hash) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING
RETURNING key;

-- name: get_idempotency_key
-- The stored first result of a key.
SELECT request_hash, status_code, body FROM idempotency_key WHERE customer_id = $1 AND key = $2;

-- name: store_idempotent_response
-- Remember the first result of a key, in the transaction that produced it.
UPDATE idempotency_key SET status_code = $3, body = $4 WHERE customer_id = $1 AND key = $2;

-- name: delete_old_idempotency_keys
-- Housekeeping: keys older than the retention.
DELETE FROM idempotency_key WHERE created_at < now() - make_interval(hours => $1);
