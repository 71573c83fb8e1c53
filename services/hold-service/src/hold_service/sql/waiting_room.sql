-- name: lock_room
-- A showtime's room as it is before an operator changes it (locked until the change commits): whether it is on.
SELECT enabled FROM waiting_room WHERE showtime_id = $1 FOR UPDATE;

-- name: configure_room
-- The operator's configuration of a showtime's room ($1 showtime, $2 mode on|off|auto, $3 active limit, $4
-- opens at or NULL for "open now", $5 / $6 the automatic thresholds or NULL for the defaults, $7 the reason
-- to record when the room's state changes, $8 whether it is on now); nothing when the showtime does not
-- exist. The lease and the seed stay. With the showtime's start and status (a closed showtime's queue is not
-- joined).
WITH room AS (
    INSERT INTO waiting_room (showtime_id, mode, enabled, active_limit, opens_at, open_at_arrivals, open_at_active,
                              changed_reason, changed_at)
    SELECT $1, $2, $8, $3, $4, $5, $6, $7, now() WHERE EXISTS (SELECT 1 FROM showtime WHERE showtime_id = $1)
    ON CONFLICT (showtime_id) DO UPDATE
    SET mode = excluded.mode, enabled = excluded.enabled, active_limit = excluded.active_limit,
        opens_at = excluded.opens_at, open_at_arrivals = excluded.open_at_arrivals,
        open_at_active = excluded.open_at_active,
        changed_reason = CASE WHEN waiting_room.enabled <> excluded.enabled THEN excluded.changed_reason
                              ELSE waiting_room.changed_reason END,
        changed_at = CASE WHEN waiting_room.enabled <> excluded.enabled THEN now() ELSE waiting_room.changed_at END,
        quiet_since = NULL, updated_at = now()
    RETURNING *
)
SELECT room.*, s.starts_at, s.status = 'CANCELLED' AS cancelled
FROM room JOIN showtime s ON s.showtime_id = room.showtime_id;

-- name: get_room
-- A showtime's room configuration, with the showtime's start and status.
SELECT r.*, s.starts_at, s.status = 'CANCELLED' AS cancelled
FROM waiting_room r JOIN showtime s ON s.showtime_id = r.showtime_id
WHERE r.showtime_id = $1;

-- name: open_room_automatically
-- The rush decision, once across every process: an automatic room that is off turns on ($2 the reason,
-- ARRIVALS or ACTIVE). A showtime nobody configured gets its row now, in the automatic mode with the
-- deployment's active limit ($3). Nothing when the room is on already, forced off or on, or the showtime is
-- not on sale (no room for a sale that is over). With the showtime's start and status.
WITH room AS (
    INSERT INTO waiting_room (showtime_id, mode, enabled, active_limit, changed_reason, changed_at)
    SELECT $1, 'auto', true, $3, $2, now()
    WHERE EXISTS (SELECT 1 FROM showtime WHERE showtime_id = $1 AND status <> 'CANCELLED' AND starts_at > now())
    ON CONFLICT (showtime_id) DO UPDATE
    SET enabled = true, changed_reason = excluded.changed_reason, changed_at = now(), quiet_since = NULL,
        updated_at = now()
    WHERE waiting_room.mode = 'auto' AND NOT waiting_room.enabled
    RETURNING *
)
SELECT room.*, s.starts_at, s.status = 'CANCELLED' AS cancelled
FROM room JOIN showtime s ON s.showtime_id = room.showtime_id;

-- name: open_automatic_rooms
-- The automatic rooms that are on now (the worker's `rooms` role decides whether their rush is over).
SELECT r.*, s.starts_at, s.status = 'CANCELLED' AS cancelled
FROM waiting_room r JOIN showtime s ON s.showtime_id = r.showtime_id
WHERE r.mode = 'auto' AND r.enabled
ORDER BY r.showtime_id
LIMIT $1;

-- name: rooms_on
-- How many rooms are on now (forced or opened by the platform): the `ticketing_waiting_rooms_open` gauge.
SELECT count(*) FROM waiting_room WHERE enabled;

-- name: note_room_quiet
-- An open automatic room's rush is over ($2 true) or not: since when it has been over (NULL: it is not).
UPDATE waiting_room SET quiet_since = CASE WHEN $2 THEN coalesce(quiet_since, now()) END
WHERE showtime_id = $1 AND mode = 'auto' AND enabled
RETURNING quiet_since;

-- name: close_room_automatically
-- An open automatic room whose rush has been over for $2 seconds turns off, once across every process.
-- With the showtime's start and status.
WITH room AS (
    UPDATE waiting_room
    SET enabled = false, changed_reason = 'RUSH_OVER', changed_at = now(), quiet_since = NULL, updated_at = now()
    WHERE showtime_id = $1 AND mode = 'auto' AND enabled AND quiet_since <= now() - make_interval(secs => $2)
    RETURNING *
)
SELECT room.*, s.starts_at, s.status = 'CANCELLED' AS cancelled
FROM room JOIN showtime s ON s.showtime_id = room.showtime_id;

-- name: room_facts
-- What one admission step decides on: the configuration, the lease, the seed, and the seats. `available`
-- counts seats free now (lazy expiry: a hold past its time frees them without any write), `held` seats of
-- live holds, `holders` the customers who hold them. One scan of the showtime's few hundred seats, once per
-- step for the whole cluster (one process takes a step at a time), never per poll.
SELECT r.enabled, r.mode, r.active_limit, r.opens_at, r.admitted_until, r.shuffle_seed,
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
