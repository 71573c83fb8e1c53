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

-- name: claim_due_email
-- The oldest due pending e-mail, locked for this sender until its transaction ends (others skip it).
SELECT id, message_id, attempts, extract(epoch FROM now() - queued_at)::float8 AS age_seconds,
       recipient, message, recipient_ascii, message_ascii
FROM email_outbox
WHERE status = 'PENDING' AND next_attempt_at <= now()
ORDER BY next_attempt_at, id
LIMIT 1
FOR UPDATE SKIP LOCKED;

-- name: mark_email_sent
-- The SMTP server accepted the message.
UPDATE email_outbox
SET status = 'SENT', sent_at = now(), attempts = attempts + 1, last_attempt_at = now(), last_error = NULL
WHERE id = $1;

-- name: defer_email
-- A transient failure: count the attempt, keep it pending until the backoff has passed.
UPDATE email_outbox
SET attempts = attempts + 1, last_attempt_at = now(), last_error = $2,
    next_attempt_at = now() + make_interval(secs => $3)
WHERE id = $1;

-- name: fail_email
-- Give up on this e-mail: permanent refusal or a bound reached; the sender moves on to the next one.
UPDATE email_outbox
SET status = 'FAILED', attempts = attempts + 1, last_attempt_at = now(), last_error = $3,
    failed_at = now(), failure_reason = $2
WHERE id = $1;

-- name: lock_failed_email
-- Operator re-queue: one FAILED e-mail with what is needed to render it again; no row if not FAILED.
SELECT id, kind, customer_id, recipient, failure_reason, event::text AS event, message IS NOT NULL AS rendered
FROM email_outbox
WHERE id = $1 AND status = 'FAILED'
FOR UPDATE;

-- name: requeue_rendered_email
-- Operator re-queue with a fresh rendering: pending again, attempts and age counted from now.
UPDATE email_outbox
SET status = 'PENDING', recipient = $2, message = $3, recipient_ascii = $4, message_ascii = $5,
    attempts = 0, queued_at = now(), next_attempt_at = now(), failed_at = NULL, failure_reason = NULL
WHERE id = $1 AND status = 'FAILED';

-- name: requeue_email_as_is
-- Operator re-queue of the stored message (an e-mail queued before events were kept with it).
UPDATE email_outbox
SET status = 'PENDING', attempts = 0, queued_at = now(), next_attempt_at = now(), failed_at = NULL,
    failure_reason = NULL
WHERE id = $1 AND status = 'FAILED' AND message IS NOT NULL;

-- name: email_status
-- Where one e-mail stands (operator CLI).
SELECT status FROM email_outbox WHERE id = $1;

-- name: failed_email_ids
-- Every FAILED e-mail, optionally of one reason, oldest first (operator CLI `retry --failed`).
SELECT id FROM email_outbox WHERE status = 'FAILED' AND ($1::text IS NULL OR failure_reason = $1) ORDER BY id;

-- name: list_emails
-- Operator CLI listing, newest first, optionally of one status.
SELECT id, status, kind, booking_id, recipient, attempts, failure_reason, last_error, created_at,
       next_attempt_at
FROM email_outbox
WHERE $1::text IS NULL OR status = $1
ORDER BY id DESC
LIMIT $2;
