-- depends: 0013_door_checkins
-- A waiting room that opens itself (docs/waiting-room.md, "The automatic mode").
--
-- - mode: the operator's choice. 'on' and 'off' force the room; 'auto' lets the platform turn it on at a
--   rush and off after it. `enabled` stays what every request reads: whether the room is on NOW (forced, or
--   opened by the platform). A showtime with no row is 'auto' with the deployment's defaults
--   (WAITING_ROOM_AUTO_DEFAULT); the row is written when its room first opens.
-- - open_at_arrivals / open_at_active: the operator's thresholds (NULL: the deployment's defaults,
--   WAITING_ROOM_AUTO_OPEN_AT_*).
-- - changed_reason / changed_at: why and when `enabled` last changed (ARRIVALS, ACTIVE, OPERATOR, RUSH_OVER),
--   as the WaitingRoomOpened / WaitingRoomClosed event written in the same transaction says.
-- - quiet_since: since when an open automatic room's rush has been over (NULL: it is not); it closes once
--   that is WAITING_ROOM_AUTO_CLOSE_AFTER_SECONDS old. Kept here, not in a process, so that any worker
--   replica may close it, once (a conditional UPDATE).

ALTER TABLE waiting_room
    ADD COLUMN mode             TEXT NOT NULL DEFAULT 'on' CHECK (mode IN ('on', 'off', 'auto')),
    ADD COLUMN open_at_arrivals INTEGER CHECK (open_at_arrivals >= 1),
    ADD COLUMN open_at_active   INTEGER CHECK (open_at_active >= 1),
    ADD COLUMN changed_reason   TEXT CHECK (changed_reason IN ('ARRIVALS', 'ACTIVE', 'OPERATOR', 'RUSH_OVER')),
    ADD COLUMN changed_at       TIMESTAMPTZ,
    ADD COLUMN quiet_since      TIMESTAMPTZ;

-- Rooms configured before: 'on' or 'off' as the operator left them.
UPDATE waiting_room SET mode = CASE WHEN enabled THEN 'on' ELSE 'off' END;
ALTER TABLE waiting_room ALTER COLUMN mode DROP DEFAULT;

-- The worker's `rooms` role reads the open automatic rooms every few seconds.
CREATE INDEX waiting_room_auto_open ON waiting_room (showtime_id) WHERE mode = 'auto' AND enabled;
