-- depends: 0001_payments
-- The money side of the booking saga (docs/saga.md): every payment the gateway reports paid
-- ends in a booking or in a refund.
--
-- - cancel_requested_at: the hold ended while the checkout was still creating its gateway session; the
--   session is cancelled as soon as it is known (the checkout itself, or the reconciler).
-- - gateway_paid_at: the gateway took the money.
-- - booking_confirmed_at: hold-service's BookingConfirmed named this payment (a final state).
-- - refund_*: the money goes back (BookingFailed, or paid at the gateway after it was settled as not paid);
--   the reconciler retries the refund with backoff until the gateway accepts it.
ALTER TABLE payment
    ADD COLUMN cancel_requested_at  TIMESTAMPTZ,
    ADD COLUMN gateway_paid_at      TIMESTAMPTZ,
    ADD COLUMN booking_confirmed_at TIMESTAMPTZ,
    ADD COLUMN refund_reason        TEXT CHECK (refund_reason IN ('HOLD_EXPIRED', 'HOLD_RELEASED',
                                                                  'PAID_AFTER_SETTLEMENT')),
    ADD COLUMN refund_due_since     TIMESTAMPTZ,
    ADD COLUMN refund_attempts      INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN refund_next_at       TIMESTAMPTZ,
    ADD COLUMN refund_last_error    TEXT;

UPDATE payment SET gateway_paid_at = updated_at WHERE status IN ('SUCCEEDED', 'REFUNDED');

-- Money comes back only when the gateway took it, and a booked payment is never refunded.
ALTER TABLE payment
    ADD CONSTRAINT refund_of_paid CHECK (status <> 'REFUNDED' OR gateway_paid_at IS NOT NULL),
    ADD CONSTRAINT booked_or_refunded CHECK (booking_confirmed_at IS NULL OR refund_reason IS NULL),
    ADD CONSTRAINT refund_due_has_reason CHECK ((refund_reason IS NULL) = (refund_due_since IS NULL));

CREATE INDEX payment_refund_due ON payment (refund_next_at)
    WHERE refund_reason IS NOT NULL AND status <> 'REFUNDED';
CREATE INDEX payment_cancel_requested ON payment (cancel_requested_at)
    WHERE status = 'PENDING' AND cancel_requested_at IS NOT NULL;
CREATE INDEX payment_paid_unconfirmed ON payment (gateway_paid_at)
    WHERE status = 'SUCCEEDED' AND booking_confirmed_at IS NULL AND refund_reason IS NULL;
CREATE INDEX payment_by_hold ON payment (hold_id);
