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
-- Queue one rendered e-mail; a second insert for the same (event, kind) is a no-op.
INSERT INTO email_outbox (event_id, kind, booking_id, customer_id, recipient, message_id, message)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: claim_pending_emails
-- Oldest pending e-mails, locked for this sender until its transaction ends (other senders skip them).
SELECT id, recipient, message_id, message FROM email_outbox
WHERE status = 'PENDING'
ORDER BY id
LIMIT $1
FOR UPDATE SKIP LOCKED;

-- name: mark_email_sent
-- The SMTP server accepted the message.
UPDATE email_outbox SET status = 'SENT', sent_at = now(), attempts = attempts + 1, last_error = NULL
WHERE id = $1;

-- name: record_email_failure
-- Keep the row pending; the next pass retries it.
UPDATE email_outbox SET attempts = attempts + 1, last_error = $2 WHERE id = $1;
