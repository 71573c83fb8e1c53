-- The story of one booking (`ticketing booking <id>`): read-only queries of the services' own tables, each
-- run with that service's role (so in its schema). An operator's tool: tests/contract runs them against
-- the migrated schemas, so a renamed column breaks a test, not an incident.

-- name: hold_story
-- hold-service: the hold ($1 booking id) with its seats, status and payment.
SELECT created_at AS at, 'hold ' || hold_id || ' ' || status || ' seats ' || array_to_string(seats, ',')
       || ' amount ' || amount_cents || ' expires ' || expires_at
       || coalesce(' payment ' || payment_id, '') AS what
FROM booking WHERE booking_id = $1;

-- name: payment_story
-- payment-service: every payment attempt of the booking ($1).
SELECT created_at AS at, 'payment ' || payment_id || ' ' || status || ' amount ' || amount_cents
       || ' discount ' || discount_cents || coalesce(' voucher ' || voucher_code, '')
       || coalesce(' session ' || session_id, '') || coalesce(' refund ' || refund_id, '')
       || coalesce(' refund due: ' || refund_reason || ' (' || refund_attempts || ' attempts)', '') AS what,
       payment_id::text AS payment_id
FROM payment WHERE booking_id = $1 ORDER BY created_at;

-- name: voucher_story
-- voucher-service: the uses reserved for the booking's payments ($1: payment ids; orderId = paymentId).
SELECT created_at AS at, 'voucher ' || voucher_code || ' use for order ' || order_id || ' ' || status AS what
FROM voucher_redemption WHERE order_id = ANY($1::text[]) ORDER BY created_at;

-- name: notifier_story
-- notifier: the booking's e-mails and its loyalty points ($1 booking id).
SELECT queued_at AS at, 'e-mail ' || kind || ' to ' || recipient || ' ' || status || ' after '
       || attempts || ' attempt(s)' || coalesce(' (' || failure_reason || ')', '') AS what
FROM email_outbox WHERE booking_id = $1
UNION ALL
SELECT credited_at, 'points ' || points || ' for ' || amount_cents || ' cents' FROM loyalty_points WHERE booking_id = $1
ORDER BY 1;

-- name: outbox_story
-- Any service: the events it wrote for the booking ($1), published or not.
SELECT created_at AS at, convert_from(payload, 'UTF8')::jsonb ->> 'type' AS type,
       CASE WHEN published_at IS NOT NULL THEN 'published' WHEN quarantined_at IS NOT NULL THEN 'QUARANTINED'
            ELSE 'waiting' END AS state
FROM outbox WHERE message_key = $1::text ORDER BY id;
