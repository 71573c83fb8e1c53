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
