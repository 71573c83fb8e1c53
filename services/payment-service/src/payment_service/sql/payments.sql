-- name: insert_payment
-- A PENDING payment written before the gateway is called, its session ending at $10 (the checkout's window);
-- a retry with the same id changes nothing, and neither does a hold that had $11 payments already
-- (MAX_CHECKOUTS_PER_HOLD; at most one of them live: payment_one_live_per_hold).
INSERT INTO payment (payment_id, hold_id, booking_id, customer_id, showtime_id, amount_cents,
                     discount_cents, voucher_code, idempotency_key, expires_at, currency)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $12
WHERE (SELECT count(*) FROM payment WHERE hold_id = $2) < $11
ON CONFLICT DO NOTHING;

-- name: get_payment
-- One payment by id.
SELECT * FROM payment WHERE payment_id = $1;

-- name: payments_of_hold
-- Every payment attempt of a hold, oldest first.
SELECT * FROM payment WHERE hold_id = $1 ORDER BY created_at;

-- name: lock_live_payment_of_hold
-- The PENDING payment of a hold, if any, locked. The status test is written `(...) IS TRUE` so that the plan
-- each connection keeps finds the row by its key: a plain `status = 'PENDING'` lets PostgreSQL read the whole
-- partial index payment_pending_since instead, which looks cheapest when the statistics were made with few
-- payments PENDING, and holds every checkout of a rush (settle and request_cancel likewise; refund_due,
-- refund_cancelled and mark_refunded, against the indexes of paid or refund-due payments, which hold every
-- payment of a cancelled showtime: tests/integration/test_key_lookup_plans.py).
SELECT * FROM payment WHERE hold_id = $1 AND (status = 'PENDING') IS TRUE FOR UPDATE;

-- name: attach_session
-- Record the gateway session once; returns a row only for the first writer (so CheckoutStarted is
-- appended once even when two retries of one key race), with whether the hold ended meanwhile.
UPDATE payment SET session_id = $2, redirect_url = $3, updated_at = now()
WHERE payment_id = $1 AND session_id IS NULL
RETURNING cancel_requested_at IS NOT NULL AS cancel_requested;

-- name: request_cancel
-- The hold ended while the checkout had no gateway session yet: cancel it once it has one. Returns the
-- session if it is known by now (then the caller cancels it at once).
UPDATE payment SET cancel_requested_at = coalesce(cancel_requested_at, now()), updated_at = now()
WHERE payment_id = $1 AND (status = 'PENDING') IS TRUE  -- by its key (lock_live_payment_of_hold)
RETURNING session_id;

-- name: settle
-- PENDING -> SUCCEEDED | FAILED | EXPIRED, once: the gateway's session state decides.
UPDATE payment
SET status = $2, updated_at = now(),
    gateway_paid_at = CASE WHEN $2 = 'SUCCEEDED' THEN now() END
WHERE payment_id = $1 AND (status = 'PENDING') IS TRUE  -- by its key (lock_live_payment_of_hold)
RETURNING *;

-- name: paid_after_settlement
-- The gateway took the money of a payment settled as not paid (FAILED, EXPIRED): no booking can follow,
-- so the money goes back. Returns the payment the first time.
UPDATE payment
SET gateway_paid_at = now(), refund_reason = 'PAID_AFTER_SETTLEMENT', refund_due_since = now(),
    refund_next_at = now(), updated_at = now()
WHERE payment_id = $1 AND status IN ('FAILED', 'EXPIRED') AND refund_reason IS NULL
RETURNING *;

-- name: refund_due
-- BookingFailed: the booking of a paid payment cannot be honoured; its money goes back. Not for a payment
-- already booked (booked_or_refunded) or already due. Returns the payment the first time.
UPDATE payment
SET refund_reason = $2, refund_due_since = now(), refund_next_at = now(), updated_at = now()
WHERE payment_id = $1 AND (status = 'SUCCEEDED') IS TRUE  -- by its key (lock_live_payment_of_hold)
  AND refund_reason IS NULL AND booking_confirmed_at IS NULL
RETURNING *;

-- name: refund_cancelled
-- BookingCancelled: the booking of this paid payment is cancelled; its whole amount goes back, whether or not
-- its BookingConfirmed was recorded yet (events of two producers come in no fixed order). Returns the payment
-- the first time only: a repeated or second cancellation owes nothing more.
UPDATE payment
SET refund_reason = $2, refund_due_since = now(), refund_next_at = now(), updated_at = now()
WHERE payment_id = $1 AND (status = 'SUCCEEDED') IS TRUE  -- by its key (lock_live_payment_of_hold)
  AND refund_reason IS NULL
RETURNING *;

-- name: booking_confirmed
-- BookingConfirmed named this payment. Returns the payment (NULL booking_confirmed_at before) the first time;
-- nothing for a payment whose money is due back, unless because that booking was cancelled (then recorded
-- too, in whatever order the two events came).
UPDATE payment SET booking_confirmed_at = now(), updated_at = now()
WHERE payment_id = $1 AND booking_confirmed_at IS NULL
  AND ((status = 'SUCCEEDED' AND refund_reason IS NULL)
       OR (status IN ('SUCCEEDED', 'REFUNDED') AND refund_reason IN ('CUSTOMER_CANCELLED', 'SHOWTIME_CANCELLED')))
RETURNING *;

-- name: claim_refunds
-- Refunds due now, oldest first, leased for $2 s (another reconciler skips them meanwhile; a lease that
-- runs out, say the process died, is taken again: the gateway's refund is idempotent on the payment id).
UPDATE payment SET refund_next_at = now() + make_interval(secs => $2)
WHERE payment_id IN (SELECT payment_id FROM payment
                     WHERE refund_reason IS NOT NULL AND status <> 'REFUNDED' AND refund_next_at <= now()
                     ORDER BY refund_next_at
                     LIMIT $1
                     FOR UPDATE SKIP LOCKED)
RETURNING *;

-- name: mark_refunded
-- The gateway accepted the refund: REFUNDED with its id, once.
UPDATE payment SET status = 'REFUNDED', refund_id = $2, refund_next_at = NULL, refund_last_error = NULL,
                   updated_at = now()
WHERE payment_id = $1 AND (status IN ('SUCCEEDED', 'FAILED', 'EXPIRED')) IS TRUE  -- by its key (as settle)
  AND refund_reason IS NOT NULL
RETURNING *;

-- name: refund_failed
-- The gateway did not accept the refund: try again after $2 s.
UPDATE payment SET refund_attempts = refund_attempts + 1, refund_last_error = $3,
                   refund_next_at = now() + make_interval(secs => $2), updated_at = now()
WHERE payment_id = $1 AND status <> 'REFUNDED';

-- name: pending_to_reconcile
-- Reconciliation candidates: PENDING and its session's time is over (settled at the next pass: its hold
-- lasts only the grace longer), or PENDING for longer than $1 s, or its hold ended (cancel requested).
-- `past` says whether the session's time is over by Postgres' clock.
SELECT *, expires_at <= now() AS past FROM payment
WHERE status = 'PENDING'
  AND (expires_at <= now() OR created_at < now() - make_interval(secs => $1) OR cancel_requested_at IS NOT NULL)
ORDER BY created_at
LIMIT $2;

-- name: money_unresolved
-- What an operator must look at: refunds not done $1 s after they fell due, and payments paid more than
-- $1 s ago that are neither booked nor due back.
SELECT
    count(*) FILTER (WHERE refund_reason IS NOT NULL AND status <> 'REFUNDED') AS refunds_pending,
    count(*) FILTER (WHERE refund_reason IS NOT NULL AND status <> 'REFUNDED'
                       AND refund_due_since < now() - make_interval(secs => $1)) AS refunds_overdue,
    count(*) FILTER (WHERE status = 'SUCCEEDED' AND booking_confirmed_at IS NULL AND refund_reason IS NULL
                       AND gateway_paid_at < now() - make_interval(secs => $1)) AS paid_unbooked,
    min(refund_due_since) FILTER (WHERE refund_reason IS NOT NULL AND status <> 'REFUNDED') AS oldest_refund_due
FROM payment
WHERE (refund_reason IS NOT NULL AND status <> 'REFUNDED')
   OR (status = 'SUCCEEDED' AND booking_confirmed_at IS NULL AND refund_reason IS NULL);

-- name: get_key
-- A stored idempotency key of a customer.
SELECT * FROM idempotency_key WHERE customer_id = $1 AND key = $2;

-- name: insert_key
-- Claim an idempotency key for a new payment id; returns a row only for the first claimer.
INSERT INTO idempotency_key (customer_id, key, request_hash, payment_id)
VALUES ($1, $2, $3, $4)
ON CONFLICT DO NOTHING
RETURNING payment_id;

-- name: delete_keys_before
-- Housekeeping: idempotency keys older than the retention (>= 24 h).
DELETE FROM idempotency_key WHERE created_at < now() - make_interval(secs => $1);

-- name: event_seen
-- Has this gateway event id been processed?
SELECT 1 FROM gateway_event WHERE event_id = $1;

-- name: record_event
-- De-duplication of callbacks: returns a row only the first time an event id is recorded.
INSERT INTO gateway_event (event_id, event_type, session_id) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING
RETURNING event_id;

-- name: delete_events_before
-- Housekeeping: callback ids older than the retention (>= 3 days, gateways retry for days).
DELETE FROM gateway_event WHERE received_at < now() - make_interval(secs => $1);
