-- name: adopt_currency
-- Showtimes created without a currency (by the previous release, during an upgrade) get the deployment's ($1).
UPDATE showtime SET currency = $1 WHERE currency IS NULL;

-- name: insert_showtime
-- Create a showtime ($10: the no-lone-seat rule, $11 its currency); returns nothing when the id already exists.
INSERT INTO showtime (showtime_id, title, starts_at, price_cents, prices, duration_minutes, cinema, hall, time_zone,
                      no_lone_seat, currency)
VALUES ($1, $2, $3, $4, $5::text::jsonb, $6, $7, $8, $9, $10, $11)
ON CONFLICT DO NOTHING
RETURNING showtime_id;

-- name: insert_seats
-- The seats of a new showtime, all AVAILABLE: $2 codes, $3 categories, $4 rows, $5 places in the row's drawing,
-- $6 ranks for best available (lower is better).
INSERT INTO show_seat (showtime_id, seat_code, category, row_name, x, rank)
SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::int[], $6::int[]);

-- name: choose_seats
-- Best available, inside the transaction that then runs take_seats on the answer: $1 showtime, $2 how many,
-- $3 category, $4 together, $5 how many runs to try. The seats chosen and locked (choose_seats /
-- choose_scattered_seats, sql/schema.sql); `{}`: none free now; NULL: no such showtime.
SELECT CASE WHEN $4 THEN choose_seats($1, $2, $3, $5) ELSE choose_scattered_seats($1, $2, $3) END AS seats;

-- name: take_seats
-- Holds of one showtime, one or several, in ONE statement, its own transaction: the hold writer's batches, a hold
-- asked alone, a best-available choice (choose_seats, in the caller's transaction). $1 showtime, $2 TTL s, $3 cap,
-- $10 the event form (ticketing.envelope), $12 SALES_CLOSE_MINUTES_BEFORE_START, $13 whether the caller's
-- transaction has locked the seats beside the holds' (lock_beside, choose_seats); per hold, in arrival order: $4
-- hold ids, $5 customers, $6 booking ids, $9 the cause headers its events carry; per requested seat, each hold's
-- in seat-code order: $7 its hold's position (1-based), $8 its code, $11 its ticket type.
-- Every requested seat is locked in seat-code order (every path does: no deadlock; FOR UPDATE returns the latest
-- committed version after a wait) and each hold is decided on those locked rows, the source of truth, all or
-- nothing: the showtime is on sale (else `closed`), every seat exists (`found`: those that do), has a price of
-- its category for its ticket type (`unpriced`: those without) and is free (lazy expiry; `taken`: those another
-- hold has or booked), and no hold was written before under its id. A retry under one Idempotency-Key reuses its
-- hold id: `earlier` (a hold with that id was written before this statement began) and `mine` (its seats belong
-- to it: a twin wrote it meanwhile) are answers, and nothing is written. The amount is the sum of the seats'
-- prices; the booking's expires_at is its seats' (one clock: Postgres' now()). The holds that pass are written
-- (bookings in customer order: the cap check's locks at COMMIT are then taken in one order) with their events:
-- each hold's SeatsReleased for the expired holds whose seats it takes (lazy expiry), then its SeatsHeld, holds
-- in arrival order, so a showtime's events in seatMapVersion order replay its seat map. The cap is checked at
-- COMMIT (check_customer_seat_cap, sql/schema.sql), for all the holds at once.
-- A hold of several is decided conservatively: it also passes only if no seat and no customer of it is in an
-- earlier hold of the statement, its customer stays within the cap (a refusal at COMMIT would undo the others),
-- and the showtime has no no-lone-seat rule (holds of one statement could strand a seat together). One that
-- fails only those wrote nothing and is not `settled`: the writer asks for it again alone.
-- Under the no-lone-seat rule a hold alone that would strand a free seat (`lone`: those seats) writes nothing,
-- and `suggested` names the best run of as many seats of its first seat's category that strands nobody (read
-- from the snapshot: a hint, not a promise). Whether a seat is left alone depends on the seats two places either
-- side of the hold's, which this statement does not lock: unless $13, it answers `unlocked` and writes nothing,
-- and the caller locks them and asks again in a new statement (a new snapshot).
-- Every step reads the rows of the one before it and none joins two of them on a key: the planner guesses
-- one row for a CTE (a new showtime has no statistics), so such a join is a nested loop, seats x holds, with
-- the showtime's row locked behind it in a wave of expired holds. The plan that counts is the generic one
-- (the writer runs this statement thousands of times on each connection; bootstrap.py), which guesses even
-- fewer rows: so the SeatsReleased take their hold's cause headers from $9 by position, and the UPDATE of
-- the seats looks each row's hold up in a map, seat code -> the hold's position (test_hold_batches.py runs a
-- wave under that plan).
WITH req AS (
    SELECT * FROM unnest($4::uuid[], $5::bigint[], $6::uuid[], $9::text[])
                  WITH ORDINALITY AS r(hold_id, customer_id, booking_id, caused_by, n)
), req_seat AS (
    SELECT * FROM unnest($7::int[], $8::text[], $11::text[]) WITH ORDINALITY AS s(n, seat_code, ticket_type, i)
), showtime_row AS (
    SELECT prices, on_sale(status, starts_at, $12) AS open, no_lone_seat FROM showtime WHERE showtime_id = $1
), locked AS MATERIALIZED (
    SELECT seat_code, status, hold_id, booking_id, customer_id, hold_expires_at, category,
           seat_is_free(status, hold_expires_at) AS free
    FROM show_seat
    WHERE showtime_id = $1 AND seat_code = ANY($8::text[])
    ORDER BY seat_code
    FOR UPDATE
), per_seat AS MATERIALIZED (
    -- each requested seat, with the hold its row had when locked (a HELD seat that is free: an expired hold)
    SELECT s.n, s.seat_code, s.i, l.seat_code IS NOT NULL AS found, coalesce(l.free, false) AS free,
           min(s.n) OVER (PARTITION BY s.seat_code) = s.n AS first_asked,  -- by no earlier hold
           l.status = 'HELD' AS was_held, l.hold_id AS was_hold, l.booking_id AS was_booking,
           l.customer_id AS was_customer, l.hold_expires_at AS was_expires_at, s.ticket_type, l.category,
           ((SELECT prices FROM showtime_row) -> l.category ->> s.ticket_type)::int AS price_cents
    FROM req_seat s LEFT JOIN locked l USING (seat_code)
), wanted AS MATERIALIZED (
    SELECT r.n, r.hold_id, r.customer_id, r.booking_id, r.caused_by, count(*) AS seats,
           array_agg(p.seat_code ORDER BY p.i) AS codes,
           coalesce(array_agg(p.seat_code ORDER BY p.i) FILTER (WHERE p.found), '{}') AS found,
           coalesce(array_agg(p.seat_code ORDER BY p.i)
                        FILTER (WHERE p.found AND NOT p.free AND p.was_hold IS DISTINCT FROM r.hold_id), '{}') AS taken,
           bool_and(p.free AND p.first_asked) AS seats_free,
           coalesce(bool_and(p.found AND p.was_held AND p.was_hold = r.hold_id AND NOT p.free), false) AS mine,
           min(p.was_expires_at) AS mine_expires_at,
           min(p.category) FILTER (WHERE p.found) AS category,
           coalesce(sum(p.price_cents), 0)::int AS price_cents,
           jsonb_agg(jsonb_build_object('seat', p.seat_code, 'category', p.category, 'ticketType', p.ticket_type,
                                        'priceCents', p.price_cents) ORDER BY p.i) AS tickets,
           coalesce(array_agg(p.seat_code ORDER BY p.i) FILTER (WHERE p.found AND p.price_cents IS NULL), '{}')
               AS unpriced,
           min(r.n) OVER (PARTITION BY r.customer_id) = r.n AS first_of_customer,
           EXISTS (SELECT 1 FROM booking b WHERE b.hold_id = r.hold_id) AS earlier
    FROM req r JOIN per_seat p USING (n)
    GROUP BY r.n, r.hold_id, r.customer_id, r.booking_id, r.caused_by
), ruled AS MATERIALIZED (
    SELECT *, cardinality($4::uuid[]) = 1 AS alone,
           coalesce((SELECT no_lone_seat FROM showtime_row), false) AS rule,
           coalesce((SELECT open FROM showtime_row), false) AS open,
           CASE WHEN EXISTS (SELECT 1 FROM showtime_row) THEN price_cents END AS amount_cents
    FROM wanted
), judged AS MATERIALIZED (
    SELECT *, rule AND alone AND NOT $13 AS unlocked,
           CASE WHEN rule AND alone AND $13 THEN lone_seats($1, codes) ELSE '{}' END AS lone
    FROM ruled
), decided AS MATERIALIZED (
    SELECT *, open AND seats_free AND cardinality(unpriced) = 0 AND NOT earlier
                  AND CASE WHEN alone THEN NOT unlocked AND cardinality(lone) = 0
                           ELSE first_of_customer AND NOT rule AND seats_held(customer_id, $1) + seats <= $3 END
                  AS passes,
           now() + make_interval(secs => $2) AS expires_at
    FROM judged
), ok AS MATERIALIZED (
    SELECT * FROM decided WHERE passes
), ok_numbers AS (
    SELECT coalesce(array_agg(n), '{}') AS ns, coalesce(sum(seats), 0) AS seats, count(*) AS holds FROM ok
), seat_holder AS MATERIALIZED (
    -- each seat of the holds that pass -> its hold's position, a map the UPDATE looks each row up in
    SELECT jsonb_object_agg(seat_code, n) AS n_of FROM ok, unnest(codes) AS seat_code
), seats AS (
    UPDATE show_seat ss
    SET status = 'HELD', hold_id = ($4::uuid[])[(h.n_of ->> ss.seat_code)::int],
        customer_id = ($5::bigint[])[(h.n_of ->> ss.seat_code)::int],
        booking_id = ($6::uuid[])[(h.n_of ->> ss.seat_code)::int],
        hold_expires_at = now() + make_interval(secs => $2)  -- ok's expires_at
    -- No test of the seat here: `passes` was decided on the rows `locked` holds (their latest versions), while
    -- this scan reads the statement's snapshot, where a seat released as this statement waited for its lock is HELD.
    FROM seat_holder h
    WHERE ss.showtime_id = $1 AND ss.seat_code = ANY($8::text[]) AND h.n_of ? ss.seat_code
    RETURNING 1
), booking_rows AS (
    INSERT INTO booking (hold_id, booking_id, customer_id, showtime_id, seats, amount_cents, status,
                         expires_at, seat_cap, tickets)
    SELECT hold_id, booking_id, customer_id, $1, codes, amount_cents, 'HELD', expires_at, $3, tickets
    FROM ok
    ORDER BY customer_id, n
    RETURNING 1
), released AS (
    SELECT p.n, seat_map_change('SeatsReleased', p.was_booking, p.was_customer,
               jsonb_build_object('holdId', p.was_hold, 'seats', array_agg(p.seat_code ORDER BY p.seat_code),
                                  'reason', 'EXPIRED'), ($9::text[])[p.n]::jsonb) AS change  -- the hold's cause
    FROM per_seat p
    WHERE p.was_held AND p.n = ANY((SELECT ns FROM ok_numbers)::int[])
    GROUP BY p.n, p.was_hold, p.was_booking, p.was_customer
), changes AS (
    SELECT n, 1 AS step, change FROM released
    UNION ALL
    SELECT n, 2, seat_map_change('SeatsHeld', booking_id, customer_id,
               jsonb_build_object('holdId', hold_id, 'seats', codes, 'expiresAt', iso_utc(expires_at),
                                  'amountCents', amount_cents), caused_by::jsonb)
    FROM ok
), versions AS (
    SELECT append_seat_map_events($1, array_agg(change ORDER BY n, step), $10::text::jsonb) AS last
    FROM changes HAVING count(*) > 0
), whole AS (
    -- seats of two holds of ok are distinct (first_asked), so all seats taken means each hold got all of its
    SELECT must((SELECT count(*) FROM seats) = o.seats AND (SELECT count(*) FROM booking_rows) = o.holds,
                'a hold got part of its seats') AS checked
    FROM ok_numbers o
)
SELECT d.hold_id, d.passes AS written,
       CASE WHEN d.passes THEN d.expires_at WHEN d.mine THEN d.mine_expires_at END AS expires_at,
       d.amount_cents, d.tickets::text, d.unpriced, d.found, d.taken,
       NOT d.open AND d.amount_cents IS NOT NULL AS closed, d.earlier, d.mine, d.lone, d.unlocked,
       d.passes OR d.alone OR d.earlier OR d.mine OR d.amount_cents IS NULL OR NOT d.open
           OR cardinality(d.found) < d.seats OR cardinality(d.taken) > 0 OR cardinality(d.unpriced) > 0 AS settled,
       CASE WHEN cardinality(d.lone) > 0 THEN suggested_run($1, d.seats::int, d.category) END AS suggested,
       (SELECT last FROM versions) AS last_version, (SELECT checked FROM whole) AS checked
FROM decided d
ORDER BY d.n;

-- name: lock_beside
-- Under the no-lone-seat rule, before take_seats: $1 showtime, $2 the hold's seats. Locks, in seat-code order (as
-- every path locks: no deadlock), the seats of the same rows up to two places either side of each of them (their
-- latest versions, waiting for a transaction deciding them), so that no other hold can change whether a seat
-- beside this one is left alone until this transaction ends.
SELECT count(*) FROM (
    SELECT 1 FROM show_seat s
    WHERE s.showtime_id = $1
      AND EXISTS (SELECT 1 FROM show_seat a WHERE a.showtime_id = $1 AND a.seat_code = ANY($2::text[])
                    AND a.row_name = s.row_name AND s.x BETWEEN a.x - 2 AND a.x + 2)
    ORDER BY s.seat_code
    FOR UPDATE) beside;

-- name: get_booking
-- One hold with its status as a customer sees it (EXPIRED when HELD and past its time: lazy expiry).
SELECT hold_id, booking_id, customer_id, showtime_id, seats, amount_cents, expires_at, payment_id, created_at,
       tickets::text, CASE WHEN hold_expired(status, expires_at) THEN 'EXPIRED' ELSE status END AS status
FROM booking WHERE hold_id = $1;

-- name: lock_booking_by_booking_id
-- One hold by booking id (events carry the bookingId), locked for a payment's decision, with its status as
-- get_booking derives it.
SELECT hold_id, booking_id, customer_id, showtime_id, seats, amount_cents, expires_at, payment_id, created_at,
       tickets::text, CASE WHEN hold_expired(status, expires_at) THEN 'EXPIRED' ELSE status END AS status
FROM booking WHERE booking_id = $1
FOR UPDATE;

-- name: extend_hold
-- A HELD hold that has not expired lasts until max(its expiry, $2), never later than its creation + $3 s
-- (HOLD_MAX_SECONDS); its seats' expiry moves with it (lazy expiry reads the seats). Locks the booking, then
-- its seats in seat-code order, as every path does. The expiry (moved or not) and whether it moved; no row:
-- the hold is not HELD and live (or lost a seat at its expiry), and nothing changed (a released or expired
-- hold is never revived).
-- `closed`: the showtime is no longer on sale ($4 SALES_CLOSE_MINUTES_BEFORE_START), and nothing changed.
WITH b AS MATERIALIZED (
    SELECT bk.hold_id, bk.showtime_id, bk.seats, bk.expires_at AS was,
           CASE WHEN on_sale(st.status, st.starts_at, $4)
                THEN least(greatest(bk.expires_at, $2), bk.created_at + make_interval(secs => $3))
                ELSE bk.expires_at END AS until,
           NOT on_sale(st.status, st.starts_at, $4) AS closed
    FROM booking bk JOIN showtime st ON st.showtime_id = bk.showtime_id
    WHERE bk.hold_id = $1 AND (bk.status = 'HELD') IS TRUE AND NOT hold_expired(bk.status, bk.expires_at)
    FOR UPDATE OF bk  -- `IS TRUE`: found by its key, not in booking_held_expiry (release_holds says why)
), locked AS MATERIALIZED (
    SELECT s.seat_code, s.hold_id = b.hold_id AND s.status = 'HELD' AS owned FROM show_seat s, b
    WHERE s.showtime_id = b.showtime_id AND s.seat_code = ANY(b.seats) AND b.until > b.was
    ORDER BY s.seat_code
    FOR UPDATE OF s
), live AS MATERIALIZED (
    -- decided on the locked rows (their latest versions): a hold whose seat another hold took as its time ran out
    -- (lazy expiry, by a transaction whose clock was later than ours) is not live any more
    SELECT * FROM b
    WHERE b.until <= b.was OR (SELECT count(*) FILTER (WHERE owned) FROM locked) = cardinality(b.seats)
), seat_rows AS (
    UPDATE show_seat s SET hold_expires_at = live.until
    FROM live
    WHERE s.showtime_id = live.showtime_id AND s.seat_code IN (SELECT seat_code FROM locked)
    RETURNING 1
), booking_row AS (
    UPDATE booking SET expires_at = live.until, updated_at = now()
    FROM live
    WHERE booking.hold_id = live.hold_id AND live.until > live.was
    RETURNING 1
)
SELECT live.until AS expires_at, live.until > live.was AS moved, live.closed,
       must(live.until <= live.was OR (SELECT count(*) FROM seat_rows) = cardinality(live.seats),
            'a live hold owns all its seats') AS checked
FROM live;

-- name: gate_seats
-- What the Redis seat gate should know of a showtime on sale (it starts after now): every seat a live
-- hold holds (until its expiry) and every BOOKED seat (no expiry), with its hold id. No row: not on sale.
SELECT st.starts_at,
       coalesce(array_agg(s.seat_code ORDER BY s.seat_code) FILTER (WHERE s.seat_code IS NOT NULL), '{}') AS seats,
       coalesce(array_agg(s.hold_id ORDER BY s.seat_code) FILTER (WHERE s.seat_code IS NOT NULL), '{}') AS holds,
       coalesce(array_agg(s.hold_expires_at ORDER BY s.seat_code) FILTER (WHERE s.seat_code IS NOT NULL), '{}')
           AS expires
FROM showtime st
LEFT JOIN show_seat s ON s.showtime_id = st.showtime_id
    AND (s.status = 'BOOKED' OR (s.status = 'HELD' AND NOT seat_is_free(s.status, s.hold_expires_at)))
WHERE st.showtime_id = $1 AND st.starts_at > now()
GROUP BY st.starts_at;

-- name: release_hold
-- End a HELD hold (release_hold, sql/schema.sql): $1 hold id, $2 the reason if it has not expired
-- (CANCELLED), $3 the event form, $4 the cause headers. No row: it was not HELD.
SELECT showtime_id, seats, reason, freed, version FROM release_hold($1, $2, $3::text::jsonb, $4::text::jsonb);

-- name: sweep_expired
-- Sweeper: end up to $1 expired holds, oldest first, in one statement (release_holds, sql/schema.sql); $2 the
-- event form, $3 the cause headers. Claimed with SKIP LOCKED: sweepers in several replicas each take holds of
-- their own, and none waits on a hold another transaction is deciding (a payment, a cancel). One row per hold.
SELECT hold_id, showtime_id, seats, reason, freed, version
FROM release_holds(ARRAY(SELECT hold_id FROM booking
                         WHERE status = 'HELD' AND expires_at < now()
                         ORDER BY expires_at
                         LIMIT $1
                         FOR UPDATE SKIP LOCKED),
                   'EXPIRED', $2::text::jsonb, $3::text::jsonb);

-- name: expired_backlog
-- The sweeper's backlog: holds whose time has passed still HELD, and the age in seconds of the oldest (0 when
-- none), read from the partial index booking_held_expiry alone.
SELECT count(*) AS holds, coalesce(extract(epoch FROM now() - min(expires_at)), 0)::float8 AS oldest_seconds
FROM booking
WHERE status = 'HELD' AND expires_at < now();

-- name: confirm_hold
-- A payment for a live HELD hold books it (confirm_hold, sql/schema.sql): $1 hold id, $2 payment id, $3 amount
-- paid, $4 the event form, $5 the cause headers. The seat-map version, or NULL when it could not be booked.
SELECT confirm_hold($1, $2, $3, $4::text::jsonb, $5::text::jsonb) AS version;

-- name: seat_map
-- The seat map at its version: the showtime's details and prices, [code, status, category, row, x] per seat in
-- hall order (row, then number: A2 before A10). The statuses are the ones its changes recorded, so that the map is exactly its version (a
-- snapshot plus the later changes is the map): a hold past its time shows HELD until its release is recorded,
-- with a version, by the sweeper or by a hold that takes its seats. No row: no such showtime.
SELECT s.seat_map_version AS version, s.title, s.starts_at, s.duration_minutes, s.cinema, s.hall, s.time_zone,
       s.prices::text, s.currency,
       coalesce(array_agg(ARRAY[ss.seat_code::text, ss.status::text, ss.category, ss.row_name, ss.x::text]
                          ORDER BY length(substring(ss.seat_code FROM '^[A-Z]+')),
                                   substring(ss.seat_code FROM '^[A-Z]+') COLLATE "C",
                                   substring(ss.seat_code FROM '[0-9]+$')::int)
                FILTER (WHERE ss.seat_code IS NOT NULL), '{}') AS seats
FROM showtime s LEFT JOIN show_seat ss ON ss.showtime_id = s.showtime_id
WHERE s.showtime_id = $1
GROUP BY s.showtime_id;

-- name: claim_idempotency_key
-- First use of a key claims it, with the request's fingerprint; returns nothing when it was claimed before.
INSERT INTO idempotency_key (customer_id, key, request_hash) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING
RETURNING key;

-- name: get_idempotency_key
-- The fingerprint and the stored first outcome of a key.
SELECT request_hash, outcome FROM idempotency_key WHERE customer_id = $1 AND key = $2;

-- name: store_idempotent_outcome
-- Remember the first definitive outcome of a key (a twin's later one changes nothing).
UPDATE idempotency_key SET outcome = $3
WHERE customer_id = $1 AND key = $2 AND outcome IS NULL;

-- name: delete_old_idempotency_keys
-- Housekeeping: keys older than the retention.
DELETE FROM idempotency_key WHERE created_at < now() - make_interval(hours => $1);

-- name: catalogue
-- What's on (GET /showtimes): the showtimes starting in [$1, $2), of cinema $3 (NULL: every cinema), ordered by
-- start and id, after the one starting at $6 with id $7 (NULL: from the first), as the response's JSON text.
-- Status: CANCELLED, CLOSED (not on_sale with $4 SALES_CLOSE_MINUTES_BEFORE_START), SOLD_OUT (no seat free),
-- else ON_SALE. At most $5 showtimes; when there are more, `next` is $8 (the next page's address up to its
-- `after=`) followed by the last one's place (hold_service.domain.catalogue.cursor), else null.
SELECT json_build_object('showtimes', coalesce(json_agg(json_build_object(
           'showtimeId', c.showtime_id, 'title', c.title,
           'startsAt', to_char(c.starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
           'durationMinutes', c.duration_minutes, 'cinema', c.cinema, 'hall', c.hall, 'timeZone', c.time_zone,
           'status', CASE WHEN c.status = 'CANCELLED' THEN 'CANCELLED'
                          WHEN NOT on_sale(c.status, c.starts_at, $4) THEN 'CLOSED'
                          WHEN c.seats_available = 0 THEN 'SOLD_OUT'
                          ELSE 'ON_SALE' END,
           'seatsAvailable', c.seats_available, 'fromPriceCents', c.price_cents, 'currency', c.currency,
           'waitingRoom', c.waiting_room)
       ORDER BY c.starts_at, c.showtime_id) FILTER (WHERE c.k <= $5), '[]'),
       'next', CASE WHEN count(*) > $5 THEN $8 || min(iso_utc(c.starts_at) || '_' || c.showtime_id)
                                                        FILTER (WHERE c.k = $5) END)::text AS body
FROM (SELECT s.*, row_number() OVER (ORDER BY s.starts_at, s.showtime_id) AS k,
             (SELECT count(*) FROM show_seat ss
              WHERE ss.showtime_id = s.showtime_id AND seat_is_free(ss.status, ss.hold_expires_at)) AS seats_available,
             coalesce((SELECT w.enabled FROM waiting_room w WHERE w.showtime_id = s.showtime_id), false) AS waiting_room
      FROM showtime s
      WHERE s.starts_at >= $1 AND s.starts_at < $2 AND ($3::text IS NULL OR s.cinema = $3)
        AND ($6::timestamptz IS NULL OR (s.starts_at, s.showtime_id) > ($6, $7::bigint))
      ORDER BY s.starts_at, s.showtime_id
      LIMIT $5 + 1) c;

-- name: bookings_of
-- A customer's bookings, newest first (GET /bookings), with their showtimes' details; at most $2.
SELECT b.hold_id, b.booking_id, b.customer_id, b.showtime_id, b.seats, b.amount_cents, b.expires_at, b.payment_id,
       b.created_at, b.tickets::text,
       CASE WHEN hold_expired(b.status, b.expires_at) THEN 'EXPIRED' ELSE b.status END AS status,
       s.title, s.starts_at, s.cinema, s.hall, s.time_zone, s.currency, b.checked_in_at
FROM booking b JOIN showtime s ON s.showtime_id = b.showtime_id
WHERE b.customer_id = $1
ORDER BY b.created_at DESC, b.hold_id
LIMIT $2;

-- name: cancel_booking
-- Cancel a BOOKED booking (cancel_booking, sql/schema.sql): $1 booking id, $2 CUSTOMER or SHOWTIME_CANCELLED,
-- $3 CANCELLATION_DEADLINE_MINUTES (a customer's only), $4 the event form, $5 the cause headers.
SELECT outcome, hold_id, showtime_id, seats, version
FROM cancel_booking($1, $2, $3, $4::text::jsonb, $5::text::jsonb);

-- name: cancel_showtime
-- An operator cancels a showtime ($1, $2 the reason): it is CANCELLED from now on (a hold or a booking of it
-- that has not committed yet fails on its row: append_seat_map_events). `cancelled_now`: this call did it
-- (false: it was cancelled before); no row: no such showtime.
WITH before AS (
    SELECT status FROM showtime WHERE showtime_id = $1 FOR UPDATE
), done AS (
    UPDATE showtime SET status = 'CANCELLED', cancelled_at = now(), cancel_reason = $2
    WHERE showtime_id = $1 AND status <> 'CANCELLED'
    RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM done) AS cancelled_now FROM before;

-- name: cancelled_with_live
-- Cancelled showtimes that still have a HELD hold or a BOOKED booking (an operator's call was interrupted), at
-- most $1: the sweeper finishes them.
SELECT s.showtime_id FROM showtime s
WHERE s.status = 'CANCELLED'
  AND EXISTS (SELECT 1 FROM booking b WHERE b.showtime_id = s.showtime_id AND b.status IN ('HELD', 'BOOKED'))
LIMIT $1;

-- name: live_of_showtime
-- A cancelled showtime's holds and bookings still to end: HELD holds (live or not) and BOOKED bookings,
-- at most $2.
SELECT hold_id, booking_id, status FROM booking
WHERE showtime_id = $1 AND status IN ('HELD', 'BOOKED')
ORDER BY created_at
LIMIT $2;

-- name: number_seat_map_changes
-- Up to $1 pending seat-map changes numbered (sql/schema.sql number_seat_map_changes): how many.
SELECT number_seat_map_changes($1);
