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

-- name: record_confirmed
-- BookingConfirmed: keep its data for the e-mails that follow (the first one stands).
INSERT INTO booking (booking_id, customer_id, confirmed) VALUES ($1, $2, $3::text::jsonb)
ON CONFLICT (booking_id) DO UPDATE SET confirmed = coalesce(booking.confirmed, EXCLUDED.confirmed), updated_at = now();

-- name: record_refund
-- RefundIssued: keep its amount; returns whether the booking's cancellation was processed before it.
INSERT INTO booking (booking_id, customer_id, refund_cents) VALUES ($1, $2, $3)
ON CONFLICT (booking_id) DO UPDATE
SET refund_cents = coalesce(booking.refund_cents, EXCLUDED.refund_cents), updated_at = now()
RETURNING cancelled_at IS NOT NULL AS cancelled;

-- name: record_cancelled
-- BookingCancelled: the first one for the booking records it and returns what is known of the booking; a
-- later one (another event id) returns no row.
INSERT INTO booking (booking_id, customer_id, cancelled_at, cancelled_by) VALUES ($1, $2, now(), $3)
ON CONFLICT (booking_id) DO UPDATE SET cancelled_at = now(), cancelled_by = EXCLUDED.cancelled_by, updated_at = now()
WHERE booking.cancelled_at IS NULL
RETURNING confirmed::text AS confirmed, refund_cents, cancelled_by;

-- name: get_booking
-- What is known of one booking (an operator's re-queue renders its cancellation e-mail again).
SELECT confirmed::text AS confirmed, refund_cents, cancelled_by FROM booking WHERE booking_id = $1;

-- name: record_without_address
-- A booking event for which no address was found anywhere; returns a row the first time only.
INSERT INTO booking_without_address (event_id, booking_id, customer_id, event_type) VALUES ($1, $2, $3, $4)
ON CONFLICT (event_id) DO NOTHING
RETURNING event_id;

-- name: list_without_address
-- Operator CLI: the booking events sent to nobody, newest first, and whether the directory now has an address.
SELECT w.event_id, w.booking_id, w.customer_id, w.event_type, w.recorded_at, c.email AS directory_email
FROM booking_without_address w LEFT JOIN customer c ON c.customer_id = w.customer_id
ORDER BY w.recorded_at DESC
LIMIT $1;
