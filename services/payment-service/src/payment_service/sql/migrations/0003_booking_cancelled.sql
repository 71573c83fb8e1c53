-- depends: 0002_booking_saga
-- A booked booking may be cancelled (its customer, or an operator cancelling the showtime: BookingCancelled):
-- its payment is then refunded in full, once, by the same refund machinery as a failed booking. So a booked
-- payment may now be refunded, but only for a cancellation.
ALTER TABLE payment DROP CONSTRAINT payment_refund_reason_check;
ALTER TABLE payment DROP CONSTRAINT booked_or_refunded;

ALTER TABLE payment
    ADD CONSTRAINT payment_refund_reason_check
        CHECK (refund_reason IN ('HOLD_EXPIRED', 'HOLD_RELEASED', 'PAID_AFTER_SETTLEMENT',
                                 'CUSTOMER_CANCELLED', 'SHOWTIME_CANCELLED')),
    ADD CONSTRAINT booked_or_refunded
        CHECK (booking_confirmed_at IS NULL OR refund_reason IS NULL
               OR refund_reason IN ('CUSTOMER_CANCELLED', 'SHOWTIME_CANCELLED'));
