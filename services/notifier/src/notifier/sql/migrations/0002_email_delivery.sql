-- E-mail delivery per message: attempts with a backoff time, FAILED for what will not be sent (with the
-- reason), the ASCII form of a message for a server without SMTPUTF8, and the event it was rendered
-- from (an operator's re-queue renders it again for the customer's current address).
-- depends: 0001_notifier

ALTER TABLE email_outbox DROP CONSTRAINT email_outbox_status_check;

ALTER TABLE email_outbox
    ADD CONSTRAINT email_outbox_status_check CHECK (status IN ('PENDING', 'SENT', 'FAILED')),
    ALTER COLUMN message DROP NOT NULL,                   -- NULL: could not be rendered (FAILED)
    ADD COLUMN recipient_ascii   TEXT,                    -- IDNA spelling of a non-ASCII recipient
    ADD COLUMN message_ascii     BYTEA,                   -- the message for a server without SMTPUTF8
    ADD COLUMN event             JSONB,                   -- the booking event it was rendered from
    ADD COLUMN queued_at         TIMESTAMPTZ NOT NULL DEFAULT now(),  -- created, or re-queued by an operator
    ADD COLUMN next_attempt_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    ADD COLUMN last_attempt_at   TIMESTAMPTZ,
    ADD COLUMN failed_at         TIMESTAMPTZ,
    ADD COLUMN failure_reason    TEXT,
    ADD CONSTRAINT email_outbox_ascii_pair CHECK ((recipient_ascii IS NULL) = (message_ascii IS NULL)),
    ADD CONSTRAINT email_outbox_failed_has_reason
        CHECK ((status = 'FAILED') = (failure_reason IS NOT NULL AND failed_at IS NOT NULL)),
    ADD CONSTRAINT email_outbox_sendable CHECK (status = 'FAILED' OR message IS NOT NULL);

UPDATE email_outbox SET queued_at = created_at;

DROP INDEX email_outbox_pending;
CREATE INDEX email_outbox_due ON email_outbox (next_attempt_at, id) WHERE status = 'PENDING';
CREATE INDEX email_outbox_failed ON email_outbox (id) WHERE status = 'FAILED';
