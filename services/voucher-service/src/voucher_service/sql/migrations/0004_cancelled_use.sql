-- depends: 0003_expiry_asks_payments
-- A booking may be cancelled after it was confirmed (its customer, or with its showtime: BookingCancelled);
-- its voucher use, even a CONFIRMED one, is then RELEASED and given back to the voucher, once. cancelled_at
-- tells a use released by a cancellation from one that ended unpaid, so a BookingConfirmed arriving after
-- the cancellation is known for what it is (late), not an alarm. A cancellation may also come before the
-- flash-mode reservation is written: it is parked as the outcome CANCELLED, which no other outcome undoes.
ALTER TABLE voucher_redemption
    ADD COLUMN cancelled_at TIMESTAMPTZ,
    ADD CONSTRAINT ck_cancelled_is_released CHECK (cancelled_at IS NULL OR status = 'RELEASED');

ALTER TABLE voucher_order_outcome DROP CONSTRAINT voucher_order_outcome_outcome_check;
ALTER TABLE voucher_order_outcome
    ADD CONSTRAINT voucher_order_outcome_outcome_check CHECK (outcome IN ('CONFIRMED', 'RELEASED', 'CANCELLED'));
