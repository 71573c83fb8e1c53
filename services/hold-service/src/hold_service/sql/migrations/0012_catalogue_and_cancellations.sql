-- depends: 0011_halls_and_prices
-- What's on, my bookings and cancellations.
-- - showtime.status: ON_SALE, or CANCELLED by an operator (then nothing of it is sold again); sales also close
--   SALES_CLOSE_MINUTES_BEFORE_START before starts_at (on_sale, sql/schema.sql). The catalogue reads showtimes
--   by start.
-- - booking: a BOOKED booking may become CANCELLED (by its customer before the deadline, or with its showtime);
--   the customer's bookings are listed newest first.
ALTER TABLE showtime
    ADD COLUMN status TEXT NOT NULL DEFAULT 'ON_SALE' CHECK (status IN ('ON_SALE', 'CANCELLED')),
    ADD COLUMN cancelled_at TIMESTAMPTZ,
    ADD COLUMN cancel_reason TEXT;
CREATE INDEX showtime_by_start ON showtime (starts_at);

ALTER TABLE booking DROP CONSTRAINT booking_status_check,
    ADD CONSTRAINT booking_status_check CHECK (status IN ('HELD', 'BOOKED', 'RELEASED', 'EXPIRED', 'CANCELLED')),
    ADD COLUMN cancelled_at TIMESTAMPTZ,
    ADD COLUMN cancel_reason TEXT CHECK (cancel_reason IN ('CUSTOMER', 'SHOWTIME_CANCELLED')),
    ADD CONSTRAINT booking_cancelled_has_reason CHECK ((status = 'CANCELLED') = (cancel_reason IS NOT NULL));
CREATE INDEX booking_by_customer ON booking (customer_id, created_at DESC);
CREATE INDEX showtime_cancelled ON showtime (showtime_id) WHERE status = 'CANCELLED';
CREATE INDEX booking_live_by_showtime ON booking (showtime_id) WHERE status IN ('HELD', 'BOOKED');
