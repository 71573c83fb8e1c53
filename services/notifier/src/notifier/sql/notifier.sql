-- name: get_customer
-- The contact details of one customer, or no row.
SELECT customer_id, email, name, locale FROM customer WHERE customer_id = $1;

-- name: upsert_customer
-- Operator CLI and CSV import: create or replace one customer's contact details.
INSERT INTO customer (customer_id, email, name, locale) VALUES ($1, $2, $3, $4)
ON CONFLICT (customer_id) DO UPDATE
SET email = EXCLUDED.email, name = EXCLUDED.name, locale = EXCLUDED.locale, updated_at = now();

-- name: list_customers
-- Operator CLI listing.
SELECT customer_id, email, name, locale FROM customer ORDER BY customer_id;

-- name: credit_points
-- One credit per booking; returns a row only the first time.
INSERT INTO loyalty_points (booking_id, customer_id, event_id, amount_cents, points)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (booking_id) DO NOTHING
RETURNING booking_id;

-- name: enqueue_email
-- Queue one rendered e-mail (with the event it came from); a second insert for the same (event, kind) is a no-op.
INSERT INTO email_outbox (event_id, kind, booking_id, customer_id, recipient, message_id, message,
                          recipient_ascii, message_ascii, event)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::text::jsonb)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: enqueue_unrenderable_email
-- Record an e-mail that could not be rendered (e.g. not an address) as FAILED, so operators see it.
INSERT INTO email_outbox (event_id, kind, booking_id, customer_id, recipient, message_id, event,
                          status, failed_at, failure_reason, last_error)
VALUES ($1, $2, $3, $4, $5, $6, $7::text::jsonb, 'FAILED', now(), $8, $9)
ON CONFLICT DO NOTHING
RETURNING id;
