-- depends: 0004_hold_rules_once
-- The seat-map feed: every change of a showtime's seat map is also told, compactly, on the channel
-- `<schema>_seat_map`, so that each API process keeps its seat maps in memory from the changes (LISTEN,
-- one connection per process: adapters/seat_map_feed.py) instead of reading Postgres per request.
--
-- Every seat-map change is one SeatsHeld, SeatsReleased or BookingConfirmed event with its seatMapVersion,
-- written to the outbox by append_seat_map_events (migration 0004), the one writer of seat-map changes.
-- A trigger on those outbox rows notifies '<showtimeId>:<version>:<AVAILABLE|HELD|BOOKED>:<seat>,<seat>...'
-- (a trigger rather than a new version of that function: no copy of its body to keep in step).
-- Postgres delivers notifications at COMMIT, in commit order, and only once the change is visible to new
-- snapshots; a showtime's versions are taken under its row's lock, held to the end of the transaction, so
-- one showtime's notifications arrive in version order, without a gap, at every listener connected
-- throughout. A listener that was not (a reconnect) reloads its maps. A rolled-back transaction notifies
-- nothing. A payload names one hold's seats, far under NOTIFY's 8000-byte limit.

-- seat_map_status (the status a seat-map event gives the seats it names) is sql/schema.sql's.
CREATE FUNCTION notify_seat_map_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    event JSONB := convert_from(NEW.payload, 'UTF8')::jsonb;
BEGIN
    IF event->'data'->>'seatMapVersion' IS NULL THEN  -- not a seat-map change (BookingFailed)
        RETURN NULL;
    END IF;
    PERFORM must(seat_map_status(event->>'type') IS NOT NULL, 'a seat-map change of unknown type');
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_seat_map', concat_ws(':',
        event->>'showtimeId', event->'data'->>'seatMapVersion', seat_map_status(event->>'type'),
        (SELECT string_agg(seat, ',') FROM jsonb_array_elements_text(event->'data'->'seats') seat)));
    RETURN NULL;
END $$;

CREATE TRIGGER seat_map_change_notified AFTER INSERT ON outbox
    FOR EACH ROW WHEN (NEW.topic = 'booking-events') EXECUTE FUNCTION notify_seat_map_change();
