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

-- name: take_seats
-- The whole hold in ONE statement, and one round trip: it may run as its own transaction ($1 showtime,
-- $2 sorted seats, $3 hold id, $4 customer, $5 TTL s, $6 booking id, $7 cap; $8-$12 the SeatsHeld event:
-- id, topic, key, payload, headers; $13-$15 the payload's placeholders for expiresAt, amountCents and
-- seatMapVersion). Price; seats the customer holds now (the cap; expired holds do not count; exact at
-- COMMIT, migration 0003); the requested seats locked in seat-code order (deadlock-free against every
-- other path; FOR UPDATE returns the latest committed version after a wait); then the conditional
-- UPDATE, the source of truth: every seat must exist and be free or expired (lazy expiry), else nothing
-- is written (all-or-nothing); then the booking, whose expires_at is the seats' (one clock: Postgres
-- now()), and its event in the outbox with expiresAt and amountCents written in (the format pydantic
-- gives: microseconds only when not zero, Z). The seat-map version is stamped at COMMIT (migration
-- 0002), so the showtime's row, every hold's point of contention, is locked only then.
WITH showtime_row AS (
    SELECT price_cents FROM showtime WHERE showtime_id = $1
), held AS (
    SELECT coalesce(sum(cardinality(seats)), 0)::int AS held,
           ceil(extract(epoch FROM min(expires_at) - now()))::int AS frees_in
    FROM booking
    WHERE customer_id = $4 AND showtime_id = $1 AND status = 'HELD' AND expires_at >= now()
), locked AS MATERIALIZED (
    SELECT seat_code,
           (status = 'AVAILABLE' OR (status = 'HELD' AND hold_expires_at < now())) AS free
    FROM show_seat
    WHERE showtime_id = $1 AND seat_code = ANY($2::text[])
    ORDER BY seat_code
    FOR UPDATE
), verdict AS (
    SELECT coalesce(array_agg(seat_code ORDER BY seat_code), '{}') AS found,
           coalesce(array_agg(seat_code ORDER BY seat_code) FILTER (WHERE NOT free), '{}') AS taken,
           coalesce(EXISTS (SELECT 1 FROM showtime_row)
                    AND (SELECT held FROM held) + cardinality($2::text[]) <= $7
                    AND count(*) = cardinality($2::text[]) AND bool_and(free), false) AS go
    FROM locked
), seats AS (
    UPDATE show_seat
    SET status = 'HELD', hold_id = $3, customer_id = $4,
        hold_expires_at = now() + make_interval(secs => $5), booking_id = $6
    WHERE (SELECT go FROM verdict) AND showtime_id = $1 AND seat_code = ANY($2::text[])
      AND (status = 'AVAILABLE' OR (status = 'HELD' AND hold_expires_at < now()))
    RETURNING hold_expires_at
), booking_row AS (
    INSERT INTO booking (hold_id, booking_id, customer_id, showtime_id, seats, amount_cents, status,
                         expires_at, seat_cap)
    SELECT $3, $6, $4, $1, $2::text[], (SELECT price_cents FROM showtime_row) * cardinality($2::text[]),
           'HELD', min(hold_expires_at), $7
    FROM seats
    HAVING count(*) = cardinality($2::text[])
    RETURNING expires_at, amount_cents
), outbox_row AS (
    INSERT INTO outbox (event_id, topic, message_key, payload, headers)
    SELECT $8, $9, $10,
           convert_to(replace(replace(convert_from($11::bytea, 'UTF8'),
               '"expiresAt":' || $13::text,
               '"expiresAt":"' || to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
                   || CASE WHEN extract(microseconds FROM expires_at)::bigint % 1000000 = 0 THEN ''
                           ELSE to_char(expires_at AT TIME ZONE 'UTC', '.US') END || 'Z"'),
               '"amountCents":' || $14::text, '"amountCents":' || amount_cents), 'UTF8'),
           $12::text::jsonb
    FROM booking_row
    RETURNING id
), stamp AS (
    INSERT INTO seat_map_stamp (outbox_id, showtime_id, placeholder)
    SELECT id, $1, $15::text FROM outbox_row
)
SELECT (SELECT price_cents FROM showtime_row) AS price_cents, held.held, held.frees_in,
       verdict.found, verdict.taken,
       (SELECT expires_at FROM booking_row) AS expires_at,
       (SELECT amount_cents FROM booking_row) AS amount_cents,
       (SELECT pg_notify(current_schema() || '_outbox', '') FROM outbox_row) AS notified
FROM held, verdict;

-- name: take_seats_together
-- Several holds of one showtime in ONE statement, in the caller's transaction (the hold writer's
-- batches; sql take_seats for one): $1 showtime, $2 TTL s, $3 cap; per hold, in arrival order: $4 hold ids,
-- $5 customers, $6 booking ids, $7 event ids, $8 message keys, $9 payloads, $10 headers; $11 the topic;
-- per requested seat: $12 its hold's position (1-based), $13 its code; $14-$16 the payload placeholders
-- for expiresAt, amountCents and seatMapVersion. The decision of take_seats, made for each hold, and
-- conservatively: every seat exists and is free or expired (all the batch's rows locked in seat-code
-- order, as take_seats locks, so latest versions), the customer stays within the cap, and no seat and
-- no customer of the hold is in an earlier hold of the batch. The holds that pass are written with
-- their bookings and SeatsHeld events (inserted in customer order: the cap check's locks at COMMIT are
-- then taken in one order, migration 0003; versions stamped at COMMIT, migration 0002) and returned
-- with the seats each got. The others write nothing: the caller asks each again with take_seats.
WITH req AS (
    SELECT *
    FROM unnest($4::uuid[], $5::bigint[], $6::uuid[], $7::uuid[], $8::text[], $9::bytea[], $10::text[])
         WITH ORDINALITY AS r(hold_id, customer_id, booking_id, event_id, message_key, payload, headers, n)
), req_seat AS (
    SELECT * FROM unnest($12::int[], $13::text[]) WITH ORDINALITY AS s(n, seat_code, i)
), showtime_row AS (
    SELECT price_cents FROM showtime WHERE showtime_id = $1
), locked AS MATERIALIZED (
    SELECT seat_code,
           (status = 'AVAILABLE' OR (status = 'HELD' AND hold_expires_at < now())) AS free
    FROM show_seat
    WHERE showtime_id = $1 AND seat_code = ANY($13::text[])
    ORDER BY seat_code
    FOR UPDATE
), per_seat AS (
    SELECT s.n, s.seat_code, s.i, coalesce(l.free, false) AS free,
           min(s.n) OVER (PARTITION BY s.seat_code) = s.n AS first_asked  -- by no earlier hold
    FROM req_seat s LEFT JOIN locked l USING (seat_code)
), wanted AS MATERIALIZED (
    SELECT r.n, count(*) AS seats, array_agg(p.seat_code ORDER BY p.i) AS codes,
           bool_and(p.free AND p.first_asked) AS seats_free,
           min(r.n) OVER (PARTITION BY r.customer_id) = r.n AS first_of_customer,
           (SELECT coalesce(sum(cardinality(b.seats)), 0) FROM booking b  -- the customer's, as take_seats
            WHERE b.customer_id = r.customer_id AND b.showtime_id = $1 AND b.status = 'HELD'
              AND b.expires_at >= now()) AS held
    FROM req r JOIN per_seat p USING (n)
    GROUP BY r.n, r.customer_id
), ok AS (
    SELECT n, seats, codes
    FROM wanted
    WHERE EXISTS (SELECT 1 FROM showtime_row) AND seats_free AND first_of_customer AND held + seats <= $3
), seats AS (
    UPDATE show_seat ss
    SET status = 'HELD', hold_id = r.hold_id, customer_id = r.customer_id,
        hold_expires_at = now() + make_interval(secs => $2), booking_id = r.booking_id
    FROM req_seat s JOIN ok USING (n) JOIN req r USING (n)
    WHERE ss.showtime_id = $1 AND ss.seat_code = s.seat_code
      AND (ss.status = 'AVAILABLE' OR (ss.status = 'HELD' AND ss.hold_expires_at < now()))
    RETURNING s.n
), booking_rows AS (
    INSERT INTO booking (hold_id, booking_id, customer_id, showtime_id, seats, amount_cents, status,
                         expires_at, seat_cap)
    SELECT r.hold_id, r.booking_id, r.customer_id, $1,
           ok.codes, (SELECT price_cents FROM showtime_row) * ok.seats, 'HELD',
           now() + make_interval(secs => $2), $3
    FROM ok JOIN req r USING (n)
    ORDER BY r.customer_id, r.n
    RETURNING hold_id, expires_at, amount_cents
), outbox_rows AS (
    INSERT INTO outbox (event_id, topic, message_key, payload, headers)
    SELECT r.event_id, $11, r.message_key,
           convert_to(replace(replace(convert_from(r.payload, 'UTF8'),
               '"expiresAt":' || $14::text,
               '"expiresAt":"' || to_char(b.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
                   || CASE WHEN extract(microseconds FROM b.expires_at)::bigint % 1000000 = 0 THEN ''
                           ELSE to_char(b.expires_at AT TIME ZONE 'UTC', '.US') END || 'Z"'),
               '"amountCents":' || $15::text, '"amountCents":' || b.amount_cents), 'UTF8'),
           r.headers::jsonb
    FROM booking_rows b JOIN req r USING (hold_id)
    ORDER BY r.customer_id, r.n
    RETURNING id
), stamp AS (
    INSERT INTO seat_map_stamp (outbox_id, showtime_id, placeholder)
    SELECT id, $1, $16::text FROM outbox_rows ORDER BY id
), taken AS (
    SELECT n, count(*) AS seats FROM seats GROUP BY n
)
SELECT b.hold_id, b.expires_at, b.amount_cents, coalesce(t.seats, 0) AS seats_taken,
       (SELECT pg_notify(current_schema() || '_outbox', '') FROM outbox_rows LIMIT 1) AS notified
FROM booking_rows b JOIN req r USING (hold_id) LEFT JOIN taken t USING (n);

-- name: lock_seats
-- Lock the requested seats in seat-code order (deadlock-free against any other path that does the
-- same) and say which are free; FOR UPDATE returns the latest committed version after a wait.
SELECT seat_code,
       (status = 'AVAILABLE' OR (status = 'HELD' AND hold_expires_at < now())) AS free
FROM show_seat
WHERE showtime_id = $1 AND seat_code = ANY($2::text[])
ORDER BY seat_code
FOR UPDATE;

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
-- The seat map with lazy expiry applied, and its version; seats in hall order (row, then number: A2 before A10).
SELECT s.seat_map_version AS version,
       coalesce(json_agg(json_build_object(
           'code', ss.seat_code,
           'status', CASE WHEN ss.status = 'HELD' AND ss.hold_expires_at < now() THEN 'AVAILABLE'
                          ELSE ss.status END)
           ORDER BY length(substring(ss.seat_code FROM '^[A-Z]+')), substring(ss.seat_code FROM '^[A-Z]+') COLLATE "C",
                    substring(ss.seat_code FROM '[0-9]+$')::int), '[]'::json) AS seats
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
