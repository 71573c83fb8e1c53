-- name: booking_at_door
-- A booking as the door judges it ($1 booking id): its state, its admission so far, its showtime's start,
-- duration and status.
SELECT b.booking_id, b.customer_id, b.showtime_id, b.status, b.seats, b.tickets::text, b.checked_in_at,
       b.checked_in_door, s.title, s.starts_at, s.duration_minutes, s.status AS showtime_status
FROM booking b JOIN showtime s ON s.showtime_id = b.showtime_id
WHERE b.booking_id = $1;

-- name: admit_booking
-- The one decision of an admission: booking $1, BOOKED and not admitted yet (or, $4 true for an offline scan,
-- admitted later than $2: the earliest scan wins), is admitted at $2 by door $3. Concurrent scans of one
-- booking wait on its row and each re-checks this condition on the row as the one before left it, so exactly
-- one is admitted; no row: refused (booking_at_door says why).
UPDATE booking SET checked_in_at = $2, checked_in_door = $3
WHERE booking_id = $1 AND status = 'BOOKED' AND (checked_in_at IS NULL OR ($4 AND checked_in_at > $2))
RETURNING checked_in_at;

-- name: door_counts
-- A showtime's ($1) booked bookings and seats, and those of them admitted at the door.
SELECT count(*) FILTER (WHERE status = 'BOOKED') AS booked,
       coalesce(sum(cardinality(seats)) FILTER (WHERE status = 'BOOKED'), 0)::int AS booked_seats,
       count(*) FILTER (WHERE status = 'BOOKED' AND checked_in_at IS NOT NULL) AS admitted,
       coalesce(sum(cardinality(seats)) FILTER (WHERE status = 'BOOKED' AND checked_in_at IS NOT NULL), 0)::int
           AS admitted_seats
FROM booking WHERE showtime_id = $1 AND status IN ('BOOKED', 'CANCELLED');
