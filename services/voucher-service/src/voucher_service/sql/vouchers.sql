-- name: insert_voucher
-- Create a voucher; returns nothing when the code already exists.
INSERT INTO voucher (code, discount_amount, min_order_amount, total_limit, per_user_limit,
                     starts_at, ends_at, flash_sale)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (code) DO NOTHING
RETURNING code;

-- name: get_voucher
-- One voucher's terms and counter.
SELECT code, discount_amount, min_order_amount, total_limit, used_count, per_user_limit,
       starts_at, ends_at, flash_sale
FROM voucher WHERE code = $1;

-- name: reserve_use
-- Normal mode's reservation, one statement and its own transaction: the order's redemption if it has one
-- already (a retry, or a spent order id); else the customer's lowest free slot (none: the per-user limit is
-- reached); else the atomic check-and-increment on the hot row, whose row lock makes Postgres re-evaluate
-- used_count < total_limit after waiting, so two callers never share the last use; and the redemption in
-- that slot. The order's redemption and the free slot are read before the hot row is locked, from the
-- statement's snapshot: a twin of this order (or another order of this customer) committed after it makes
-- the INSERT fail on uq_redemption_order (uq_voucher_customer_slot), which rolls the counter back with it
-- and the caller asks again. One row: outcome RESERVED | EXISTS | NO_SLOT | OUT_OF_STOCK, and for EXISTS
-- the order's redemption.
-- $1 code, $2 customer, $3 order, $4 amount
WITH prior AS (
    SELECT voucher_code, customer_id, order_amount, status FROM voucher_redemption WHERE order_id = $3
), free AS (
    SELECT min(s) AS slot, min(v.per_user_limit) AS per_user_limit
    FROM voucher v, generate_series(0, v.per_user_limit - 1) AS s
    WHERE v.code = $1
      AND NOT EXISTS (SELECT 1 FROM voucher_redemption r
                      WHERE r.voucher_code = $1 AND r.customer_id = $2 AND r.slot = s
                        AND r.status IN ('RESERVED', 'CONFIRMED'))
), taken AS (
    UPDATE voucher SET used_count = used_count + 1
    WHERE code = $1 AND used_count < total_limit AND now() >= starts_at AND now() < ends_at
      AND NOT EXISTS (SELECT 1 FROM prior) AND (SELECT slot FROM free) IS NOT NULL
    RETURNING code
), inserted AS (
    INSERT INTO voucher_redemption (voucher_code, customer_id, order_id, order_amount, status, slot, per_user_limit)
    SELECT $1, $2, $3, $4, 'RESERVED', free.slot, free.per_user_limit FROM taken, free
    RETURNING id
)
SELECT CASE WHEN EXISTS (SELECT 1 FROM inserted) THEN 'RESERVED'
            WHEN EXISTS (SELECT 1 FROM prior) THEN 'EXISTS'
            WHEN (SELECT slot FROM free) IS NULL THEN 'NO_SLOT'
            ELSE 'OUT_OF_STOCK' END AS outcome,
       p.voucher_code, p.customer_id, p.order_amount, p.status
FROM (SELECT 1) one LEFT JOIN prior p ON true;

-- name: reserve_together
-- Normal mode, the reservations of one voucher that came together ($2 customers, $3 orders, $4 amounts),
-- written by one statement: one UPDATE of the hot row and one COMMIT for them all. It writes only those it
-- surely may, all of them or none: each alone in the batch with its order and its customer, an order with
-- no redemption yet, a customer with a free slot (the lowest), and the hot row with a use left for every
-- one of them (re-evaluated after waiting for its lock, as in reserve_use). Returns the orders written; the
-- caller asks each of the others on its own (reserve_use), which gives its verdict. A twin committed after
-- the statement's snapshot fails it on a unique index: nothing written, every one asked on its own.
-- $1 code, $2 customers, $3 orders, $4 amounts
WITH req AS (
    SELECT r.customer_id, r.order_id, r.amount, r.n,
           count(*) OVER (PARTITION BY r.customer_id) AS of_customer,
           count(*) OVER (PARTITION BY r.order_id) AS of_order
    FROM unnest($2::bigint[], $3::varchar[], $4::bigint[]) WITH ORDINALITY AS r(customer_id, order_id, amount, n)
), v AS (
    SELECT per_user_limit FROM voucher WHERE code = $1
), sure AS (
    SELECT req.customer_id, req.order_id, req.amount, req.n, free.slot, v.per_user_limit
    FROM req CROSS JOIN v
    CROSS JOIN LATERAL (
        SELECT min(s) AS slot FROM generate_series(0, v.per_user_limit - 1) AS s
        WHERE NOT EXISTS (SELECT 1 FROM voucher_redemption r
                          WHERE r.voucher_code = $1 AND r.customer_id = req.customer_id AND r.slot = s
                            AND r.status IN ('RESERVED', 'CONFIRMED'))) AS free
    WHERE req.of_customer = 1 AND req.of_order = 1 AND free.slot IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM voucher_redemption r WHERE r.order_id = req.order_id)
), taken AS (
    UPDATE voucher SET used_count = used_count + (SELECT count(*) FROM sure)
    WHERE code = $1 AND used_count + (SELECT count(*) FROM sure) <= total_limit
      AND now() >= starts_at AND now() < ends_at AND EXISTS (SELECT 1 FROM sure)
    RETURNING code
)
INSERT INTO voucher_redemption (voucher_code, customer_id, order_id, order_amount, status, slot, per_user_limit)
SELECT $1, sure.customer_id, sure.order_id, sure.amount, 'RESERVED', sure.slot, sure.per_user_limit
FROM sure, taken
ORDER BY sure.n
RETURNING order_id;

-- name: give_back_use
-- A live redemption became RELEASED in the same transaction.
UPDATE voucher SET used_count = used_count - $2 WHERE code = $1;

-- name: count_increment
-- Flash consumer: count a redemption that was just inserted; ck_used refuses an oversell here.
UPDATE voucher SET used_count = used_count + 1 WHERE code = $1;

-- name: voucher_standing
-- Quote (normal mode, or a flash voucher the gate does not hold): uses left and the customer's live uses.
-- A plain MVCC read: it never waits on the hot row's lock.
SELECT v.total_limit - v.used_count AS remaining,
       (SELECT count(*) FROM voucher_redemption r WHERE r.voucher_code = v.code AND r.customer_id = $2
          AND r.status IN ('RESERVED', 'CONFIRMED')) AS customer_uses
FROM voucher v WHERE v.code = $1;

-- name: insert_redemption
-- A redemption in the customer's lowest free slot; no row back when every slot is taken. The
-- partial unique index still settles races between two inserts for the same customer.
-- $1 code, $2 customer, $3 order, $4 amount, $5 status
WITH v AS (SELECT per_user_limit FROM voucher WHERE code = $1),
free AS (
    SELECT min(s) AS slot FROM v, generate_series(0, v.per_user_limit - 1) AS s
    WHERE NOT EXISTS (SELECT 1 FROM voucher_redemption r
                      WHERE r.voucher_code = $1 AND r.customer_id = $2 AND r.slot = s
                        AND r.status IN ('RESERVED', 'CONFIRMED'))
)
INSERT INTO voucher_redemption (voucher_code, customer_id, order_id, order_amount, status, slot, per_user_limit)
SELECT $1, $2, $3, $4, $5, free.slot, v.per_user_limit FROM v, free WHERE free.slot IS NOT NULL
ON CONFLICT (order_id) DO NOTHING
RETURNING id;

-- name: write_reservations
-- Flash consumer, a whole batch in one statement (the common case of apply_voucher_reserved): rows of
-- per_user_limit = 1 vouchers with no parked outcome go to slot 0 with ON CONFLICT (order_id) DO NOTHING,
-- and used_count grows by the rows actually inserted (ck_used refuses an oversell: the statement fails).
-- A customer whose only slot is held by another order makes uq_voucher_customer_slot fail the statement
-- (no search for a free slot: with one slot the index is the check, and cheaper than a look-up per row).
-- The caller sends at most one message per order and per (voucher, customer). One result per input, in
-- input order: inserted; exists (the order has a row already: a redelivery or a tombstone); unknown (no
-- such voucher); fallback (per_user_limit > 1 or a parked outcome: nothing written, the caller applies it
-- one by one); unseen (skipped by ON CONFLICT for a row committed after this statement's snapshot: the
-- caller fails the batch, whose replay sees it).
-- $1 codes, $2 customers, $3 orders, $4 amounts
WITH batch AS (
    SELECT b.code, b.customer_id, b.order_id, b.amount, b.n, v.per_user_limit, o.order_id IS NOT NULL AS parked
    FROM unnest($1::varchar[], $2::bigint[], $3::varchar[], $4::bigint[]) WITH ORDINALITY
         AS b(code, customer_id, order_id, amount, n)
    LEFT JOIN voucher v ON v.code = b.code
    LEFT JOIN voucher_order_outcome o ON o.order_id = b.order_id
), inserted AS (
    INSERT INTO voucher_redemption (voucher_code, customer_id, order_id, order_amount, status, slot, per_user_limit)
    SELECT b.code, b.customer_id, b.order_id, b.amount, 'RESERVED', 0, 1 FROM batch b
    WHERE b.per_user_limit = 1 AND NOT b.parked
    ORDER BY b.n
    ON CONFLICT (order_id) DO NOTHING
    RETURNING order_id, voucher_code
), counted AS (
    UPDATE voucher v SET used_count = v.used_count + c.n
    FROM (SELECT voucher_code, count(*) AS n FROM inserted GROUP BY voucher_code) c
    WHERE v.code = c.voucher_code
    RETURNING v.code
)
SELECT CASE
    WHEN b.per_user_limit IS NULL THEN 'unknown'
    WHEN b.per_user_limit <> 1 OR b.parked THEN 'fallback'
    WHEN i.order_id IS NOT NULL THEN 'inserted'
    WHEN EXISTS (SELECT 1 FROM voucher_redemption r WHERE r.order_id = b.order_id) THEN 'exists'
    ELSE 'unseen' END AS result
FROM batch b LEFT JOIN inserted i ON i.order_id = b.order_id
ORDER BY b.n;

-- name: insert_tombstone
-- Flash mode: a release (or expiry, or cancellation: $5) that came before the consumer wrote the
-- reservation. The RELEASED row owns the order_id, so a late VoucherReserved hits ON CONFLICT and is never
-- counted.
INSERT INTO voucher_redemption (voucher_code, customer_id, order_id, order_amount, status, slot, per_user_limit,
                                cancelled_at)
SELECT $1::varchar, $2::bigint, $3::varchar, $4::bigint, 'RELEASED', 0, per_user_limit,
       CASE WHEN $5::boolean THEN clock_timestamp() END
FROM voucher WHERE code = $1
ON CONFLICT (order_id) DO NOTHING
RETURNING id;

-- name: get_redemption
-- A redemption by its order id (the idempotency key).
SELECT voucher_code, customer_id, order_id, order_amount, status, created_at, cancelled_at IS NOT NULL AS cancelled
FROM voucher_redemption WHERE order_id = $1;

-- name: confirm_redemption
-- RESERVED -> CONFIRMED (CONFIRMED stays CONFIRMED: idempotent); RELEASED is not resurrected.
-- The status test is written `(...) IS TRUE` so that the plan each connection keeps finds the use by its order:
-- a plain status test lets PostgreSQL read a whole partial index of live or RESERVED uses instead
-- (uq_voucher_customer_slot, ix_redemption_expiry_queue), which looks cheapest when the statistics were made
-- with few uses live, and holds every use of a flash sale (release_redemption, cancel_redemption and
-- release_expired likewise: tests/integration/test_key_lookup_plans.py).
UPDATE voucher_redemption SET status = 'CONFIRMED', updated_at = clock_timestamp()
WHERE order_id = $1 AND (status IN ('RESERVED', 'CONFIRMED')) IS TRUE
RETURNING voucher_code, status;

-- name: release_redemption
-- RESERVED -> RELEASED exactly once: a second caller (retry, another instance, the expiry job) finds
-- no RESERVED row and gives nothing back.
UPDATE voucher_redemption SET status = 'RELEASED', updated_at = clock_timestamp()
WHERE order_id = $1 AND (status = 'RESERVED') IS TRUE  -- by its order (confirm_redemption says why)
RETURNING voucher_code, customer_id, order_id;

-- name: cancel_redemption
-- BookingCancelled: the use of a cancelled booking, RESERVED or CONFIRMED, -> RELEASED exactly once (the
-- caller gives the use back in the same transaction); a released use stays as it is.
UPDATE voucher_redemption SET status = 'RELEASED', cancelled_at = clock_timestamp(), updated_at = clock_timestamp()
WHERE order_id = $1 AND (status IN ('RESERVED', 'CONFIRMED')) IS TRUE  -- by its order (confirm_redemption says why)
RETURNING voucher_code;

-- name: try_expiry_lock
-- One expiry run at a time across instances (released at commit). Two runs at once each lock their
-- redemption rows, then update the vouchers of those rows in no fixed order: a deadlock when they share
-- vouchers. A run that finds the lock taken skips; the running one does the work (SKIP LOCKED below
-- keeps them apart all the same).
SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || '.voucher-expiry'));

-- name: expiry_candidates
-- RESERVED uses older than the TTL ($1 s) and not asked about for $2 s, least recently asked first (a use
-- kept because its payment is open goes to the back of the queue), the older id first among equal times.
-- FOR UPDATE SKIP LOCKED until the run commits: a confirm of one of them waits for the verdict, and
-- concurrent runs never share a row.
SELECT id, order_id FROM voucher_redemption
WHERE status = 'RESERVED' AND created_at < now() - make_interval(secs => $1)
  AND coalesce(expiry_checked_at, created_at) < now() - make_interval(secs => $2)
ORDER BY coalesce(expiry_checked_at, created_at), id LIMIT $3
FOR UPDATE SKIP LOCKED;

-- name: release_expired
-- The candidates whose payment ended unpaid -> RELEASED, their uses given back, in one statement. The
-- status test keeps a row released (and counted back) once.
WITH expired AS (
    UPDATE voucher_redemption r SET status = 'RELEASED', updated_at = clock_timestamp()
    WHERE r.id = ANY($1::bigint[]) AND (r.status = 'RESERVED') IS TRUE  -- by id (confirm_redemption says why)
    RETURNING r.voucher_code, r.customer_id, r.order_id
), counted AS (
    UPDATE voucher v SET used_count = v.used_count - e.n
    FROM (SELECT voucher_code, count(*) AS n FROM expired GROUP BY voucher_code) e
    WHERE v.code = e.voucher_code
    RETURNING v.code
)
SELECT e.voucher_code, e.customer_id, e.order_id, v.flash_sale
FROM expired e JOIN voucher v ON v.code = e.voucher_code;

-- name: mark_expiry_checked
-- Candidates kept (payment open, or unknown for now): asked about again after the others.
UPDATE voucher_redemption SET expiry_checked_at = clock_timestamp() WHERE id = ANY($1::bigint[]);

-- name: status_counts
-- Admin view and reconciliation: redemptions per status.
SELECT count(*) FILTER (WHERE status = 'RESERVED') AS reserved,
       count(*) FILTER (WHERE status = 'CONFIRMED') AS confirmed,
       count(*) FILTER (WHERE status = 'RELEASED') AS released
FROM voucher_redemption WHERE voucher_code = $1;

-- name: live_redemptions
-- Warm-up: the live uses Postgres knows, to seed the Redis orders/users hashes.
SELECT order_id, customer_id FROM voucher_redemption
WHERE voucher_code = $1 AND status IN ('RESERVED', 'CONFIRMED');

-- name: redemptions_of
-- Normal mode after a sell-out: which of a batch's order ids hold a redemption (their retries get 201).
SELECT voucher_code, customer_id, order_id, order_amount, status FROM voucher_redemption
WHERE order_id = ANY($1::varchar[]);

-- name: redemptions_of_voucher
-- Normal mode at a sell-out: the voucher's redemptions (at most $2), kept by the process while it answers the
-- crowd OUT_OF_STOCK from its sold-out cache, so that a retry of an order holding a use still gets its 201.
SELECT voucher_code, customer_id, order_id, order_amount, status FROM voucher_redemption
WHERE voucher_code = $1
LIMIT $2;

-- name: known_orders
-- Warm-up and reconciliation: which of these order ids Postgres has (any status).
SELECT order_id, status FROM voucher_redemption WHERE order_id = ANY($1::varchar[]);

-- name: flash_vouchers
-- Flash vouchers still selling (warm-up at start, reconciliation).
SELECT code FROM voucher WHERE flash_sale AND ends_at > now();

-- name: lock_orders
-- The flash writer and the booking outcomes of the same orders take turns: each takes these transaction
-- locks before it looks (whether the use is written; whether an outcome is parked), so the second one sees
-- what the first committed. Without them a writer whose statement began just before an outcome was parked
-- wrote the use RESERVED, while the outcome, finding no use yet, was parked and never applied.
-- Taken in one order (the keys sorted) so two batches never wait for each other in a circle.
SELECT count(*) FROM (
    SELECT pg_advisory_xact_lock(7002, k)
    FROM (SELECT DISTINCT hashtext(o) AS k FROM unnest($1::text[]) AS o ORDER BY 1) AS keys
) AS taken;

-- name: park_outcome
-- A booking outcome for an order (payment) no redemption knows yet. The first outcome stands (a CANCELLED one
-- always: park_cancellation), as on the redemption itself (service_layer/outcomes.py); returns the outcome parked after this statement (the
-- no-op update makes RETURNING give the existing row).
INSERT INTO voucher_order_outcome (order_id, outcome) VALUES ($1, $2)
ON CONFLICT (order_id) DO UPDATE SET outcome = voucher_order_outcome.outcome
RETURNING outcome;

-- name: park_cancellation
-- A cancellation for an order no redemption knows yet: it stands over any outcome parked before it (a
-- cancelled booking's use must end released, even when its confirmation was parked first).
INSERT INTO voucher_order_outcome (order_id, outcome) VALUES ($1, 'CANCELLED')
ON CONFLICT (order_id) DO UPDATE SET outcome = 'CANCELLED'
RETURNING outcome;

-- name: take_outcome
-- The parked outcome of an order, consumed by the voucher-reserved consumer.
DELETE FROM voucher_order_outcome WHERE order_id = $1 RETURNING outcome;

-- name: purge_outcomes
-- Outcomes of bookings that never had a (flash) voucher reservation.
DELETE FROM voucher_order_outcome WHERE recorded_at < now() - make_interval(secs => $1);
