-- depends: 0012_catalogue_and_cancellations
-- The door: a BOOKED booking is admitted once (its group enters together). checked_in_at/checked_in_door are
-- the earliest admission known (an offline scanner's earlier scan, synced later, takes its place); both or
-- neither are set, and only a booked or since cancelled booking has them.
ALTER TABLE booking
    ADD COLUMN checked_in_at TIMESTAMPTZ,
    ADD COLUMN checked_in_door TEXT CHECK (length(checked_in_door) BETWEEN 1 AND 40),
    ADD CONSTRAINT booking_checkin_whole CHECK ((checked_in_at IS NULL) = (checked_in_door IS NULL)),
    ADD CONSTRAINT booking_checkin_booked CHECK (checked_in_at IS NULL OR status IN ('BOOKED', 'CANCELLED'));
-- The operator's count of a showtime's admitted bookings.
CREATE INDEX booking_checked_in_by_showtime ON booking (showtime_id) WHERE checked_in_at IS NOT NULL;
