-- What the notifier knows of each booking, for the e-mails that follow its ticket: the ticket details of its
-- BookingConfirmed (a cancellation e-mail names the film, the cinema and the start), the refund RefundIssued
-- reported, and its cancellation (one cancellation e-mail per booking; a RefundIssued after it needs no
-- e-mail of its own, the cancellation e-mail told of the refund).
-- depends: 0002_email_delivery

CREATE TABLE booking (
    booking_id    UUID        PRIMARY KEY,
    customer_id   BIGINT      NOT NULL,
    confirmed     JSONB,                   -- its BookingConfirmed's data
    refund_cents  BIGINT,                  -- RefundIssued's amountCents
    cancelled_at  TIMESTAMPTZ,             -- the first BookingCancelled processed
    cancelled_by  UUID,                    -- that event's id
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT booking_cancelled_by_event CHECK ((cancelled_at IS NULL) = (cancelled_by IS NULL))
);

ALTER TABLE email_outbox DROP CONSTRAINT email_outbox_kind_check;
ALTER TABLE email_outbox
    ADD CONSTRAINT email_outbox_kind_check CHECK (kind IN ('ticket', 'refund', 'booking_failed', 'cancellation'));
-- One cancellation e-mail per booking, whatever events ask for more.
CREATE UNIQUE INDEX email_outbox_one_cancellation ON email_outbox (booking_id) WHERE kind = 'cancellation';
