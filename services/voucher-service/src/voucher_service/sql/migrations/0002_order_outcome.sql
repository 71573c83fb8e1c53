-- A booking outcome (BookingConfirmed -> CONFIRMED; BookingFailed / SeatsReleased / PaymentFailed ->
-- RELEASED) that arrived before the flash-mode VoucherReserved was written: booking-events carry no
-- voucher code, so the outcome is parked here under the order (booking) id, and the voucher-reserved
-- consumer applies it when the reservation lands. Without it a fast payment could beat a lagging
-- consumer, the confirmation would be skipped and the paid use later expired and sold again.
-- Rows for bookings that never had a voucher are purged by the expiry job.
CREATE TABLE voucher_order_outcome (
    order_id    VARCHAR(64) PRIMARY KEY,
    outcome     VARCHAR(16) NOT NULL CHECK (outcome IN ('CONFIRMED', 'RELEASED')),
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX ix_order_outcome_recorded ON voucher_order_outcome (recorded_at);
