-- name: resolve_identity
-- Our customer id of subject ($1 issuer, $2 sub), made at its first sign-in; its contact ($3 email,
-- $4 email_verified, $5 name, $6 locale) written only when it changed (no write per request), so the row is
-- returned by the INSERT, the UPDATE, or else read below (resolve_identity_unchanged).
INSERT INTO customer_identity (issuer, subject, email, email_verified, name, locale)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (issuer, subject) DO UPDATE
    SET email = EXCLUDED.email, email_verified = EXCLUDED.email_verified, name = EXCLUDED.name,
        locale = EXCLUDED.locale, updated_at = now()
    WHERE (customer_identity.email, customer_identity.email_verified, customer_identity.name,
           customer_identity.locale) IS DISTINCT FROM
          (EXCLUDED.email, EXCLUDED.email_verified, EXCLUDED.name, EXCLUDED.locale)
RETURNING customer_id;

-- name: resolve_identity_unchanged
SELECT customer_id FROM customer_identity WHERE issuer = $1 AND subject = $2;

-- name: buyer_contact
-- The contact of booking $1's customer, as his provider's token last stated it; no row: no booking, or a
-- customer who never signed in with the provider.
SELECT b.customer_id, i.email, i.email_verified, i.name, i.locale
FROM booking b JOIN customer_identity i ON i.customer_id = b.customer_id
WHERE b.booking_id = $1;
