-- name: configure_room
-- The operator's configuration of a showtime's room ($1 showtime, $2 enabled, $3 active limit, $4 opens at or
-- NULL for "open now"); nothing when the showtime does not exist. The lease and the seed stay. With the
-- showtime's start and status (a closed showtime's queue is not joined).
WITH room AS (
    INSERT INTO waiting_room (showtime_id, enabled, active_limit, opens_at)
    SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM showtime WHERE showtime_id = $1)
    ON CONFLICT (showtime_id) DO UPDATE
    SET enabled = excluded.enabled, active_limit = excluded.active_limit, opens_at = excluded.opens_at,
        updated_at = now()
    RETURNING showtime_id, enabled, active_limit, opens_at
)
SELECT room.*, s.starts_at, s.status = 'CANCELLED' AS cancelled
FROM room JOIN showtime s ON s.showtime_id = room.showtime_id;

-- name: get_room
-- A showtime's room configuration, with the showtime's start and status.
SELECT r.showtime_id, r.enabled, r.active_limit, r.opens_at, s.starts_at, s.status = 'CANCELLED' AS cancelled
FROM waiting_room r JOIN showtime s ON s.showtime_id = r.showtime_id
WHERE r.showtime_id = $1;

-- name: room_facts
-- What one admission step decides on: the configuration, the lease, the seed, and the seats. `available`
-- counts seats free now (lazy expiry: a hold past its time frees them without any write), `held` seats of
-- live holds, `holders` the customers who hold them. One scan of the showtime's few hundred seats, once per
-- step for the whole cluster (one process takes a step at a time), never per poll.
SELECT r.enabled, r.active_limit, r.opens_at, r.admitted_until, r.shuffle_seed,
       r.queue_started_at IS NOT NULL AS started,
       count(s.seat_code) FILTER (WHERE seat_is_free(s.status, s.hold_expires_at)) AS available,
       count(s.seat_code) FILTER (WHERE s.status = 'HELD' AND NOT hold_expired(s.status, s.hold_expires_at))
           AS held,
       coalesce(array_agg(DISTINCT s.customer_id)
                    FILTER (WHERE s.status = 'HELD' AND NOT hold_expired(s.status, s.hold_expires_at)), '{}')
           AS holders
FROM waiting_room r LEFT JOIN show_seat s ON s.showtime_id = r.showtime_id
WHERE r.showtime_id = $1
GROUP BY r.showtime_id;

-- name: extend_room_lease
-- Let admission tokens of the room last until at least $2 seconds from now (never shortens the lease).
UPDATE waiting_room
SET admitted_until = greatest(admitted_until, now() + make_interval(secs => $2))
WHERE showtime_id = $1
RETURNING admitted_until;

-- name: mark_room_started
-- The room's queue is being set up in Redis for the first time (a later setup is a rebuild after a loss).
UPDATE waiting_room SET queue_started_at = coalesce(queue_started_at, now()) WHERE showtime_id = $1;

-- name: fix_room_seed
-- The shuffle seed of the opening: the first one offered wins, every later caller gets that one.
UPDATE waiting_room SET shuffle_seed = coalesce(shuffle_seed, $2)
WHERE showtime_id = $1
RETURNING shuffle_seed;
