-- name: insert_payment
-- A PENDING payment written before the gateway is called; a retry with the same id changes nothing.
INSERT INTO payment (payment_id, hold_id, booking_id, customer_id, showtime_id, amount_cents,
                     discount_cents, voucher_code, idempotency_key, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT DO NOTHING;

-- name: get_payment
-- One payment by id.
SELECT * FROM payment WHERE payment_id = $1;

-- name: get_payment_for_update
-- One payment by id, locked for a state change.
SELECT * FROM payment WHERE payment_id = $1 FOR UPDATE;

-- name: live_payment_of_hold
-- The PENDING or SUCCEEDED payment of a hold, if any.
SELECT * FROM payment WHERE hold_id = $1 AND status IN ('PENDING', 'SUCCEEDED');

-- name: attach_session
-- Record the gateway session once; returns a row only for the first writer (so CheckoutStarted is
-- appended once even when two retries of one key race).
UPDATE payment SET session_id = $2, redirect_url = $3, updated_at = now()
WHERE payment_id = $1 AND session_id IS NULL
RETURNING payment_id;

-- name: transition
-- Conditional state change: applies only from one of the expected states.
UPDATE payment SET status = $2, updated_at = now()
WHERE payment_id = $1 AND status = ANY($3::text[])
RETURNING *;

-- name: mark_refunded
-- SUCCEEDED -> REFUNDED with the gateway's refund id.
UPDATE payment SET status = 'REFUNDED', refund_id = $2, updated_at = now()
WHERE payment_id = $1 AND status = 'SUCCEEDED'
RETURNING *;

-- name: pending_older_than
-- Reconciliation candidates: PENDING for longer than $1 seconds.
SELECT * FROM payment
WHERE status = 'PENDING' AND created_at < now() - make_interval(secs => $1)
ORDER BY created_at
LIMIT $2;

-- name: get_key
-- A stored idempotency key of a customer.
SELECT * FROM idempotency_key WHERE customer_id = $1 AND key = $2;

-- name: insert_key
-- Claim an idempotency key; returns a row only for the first claimer.
INSERT INTO idempotency_key (customer_id, key, request_hash, payment_id)
VALUES ($1, $2, $3, $4)
ON CONFLICT DO NOTHING
RETURNING payment_id;

-- name: store_response
-- Keep the first successful response for replays.
UPDATE idempotency_key SET response_status = $3, response_body = $4
WHERE customer_id = $1 AND key = $2 AND response_body IS NULL;

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
