-- depends: 0007_seat_map_events_set_based
-- The seat-map feed's notifications (migration 0006) sent by append_seat_map_events, the one writer of
-- seat-map changes, from the values it already has: one pg_notify per change, in version order, as before
-- (same channel, same payload, delivered at COMMIT in commit order). The trigger they replace ran once per
-- outbox row and parsed the row's payload back into JSON: in a wave's batch a large share of the statement,
-- all of it with the showtime's version row locked (make bench-wave).
DROP TRIGGER seat_map_change_notified ON outbox;
DROP FUNCTION notify_seat_map_change();

CREATE OR REPLACE FUNCTION append_seat_map_events(showtime BIGINT, changes JSONB[]) RETURNS BIGINT
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    n INT := coalesce(cardinality(changes), 0);
    last BIGINT;
    occurred TEXT := iso_utc(clock_timestamp());
    caused_by TEXT := nullif(current_setting('ticketing.request_id', true), '');
BEGIN
    IF n = 0 THEN
        RETURN NULL;
    END IF;
    UPDATE showtime s SET seat_map_version = s.seat_map_version + n
    WHERE s.showtime_id = append_seat_map_events.showtime
    RETURNING s.seat_map_version INTO last;
    IF last IS NULL THEN
        RAISE EXCEPTION 'showtime % does not exist', showtime;
    END IF;
    INSERT INTO outbox (event_id, topic, message_key, payload, headers)
    SELECT c.id, 'booking-events', c.change->>'booking',
           convert_to(jsonb_build_object(
               'eventId', c.id, 'type', c.change->>'type', 'version', 1, 'occurredAt', occurred,
               'source', 'hold-service', 'bookingId', c.change->'booking', 'showtimeId', showtime,
               'customerId', c.change->'customer',
               'data', c.change->'data' || jsonb_build_object('seatMapVersion', last - n + c.i))::text, 'UTF8'),
           jsonb_build_array(
               jsonb_build_array('id', c.id::text), jsonb_build_array('ce_specversion', '1.0'),
               jsonb_build_array('ce_id', c.id::text), jsonb_build_array('ce_type', c.change->>'type'),
               jsonb_build_array('ce_source', 'hold-service'), jsonb_build_array('ce_time', occurred),
               jsonb_build_array('content-type', 'application/json'))
           || CASE WHEN coalesce(c.change->>'requestId', caused_by) IS NULL THEN '[]'::jsonb
                   ELSE jsonb_build_array(jsonb_build_array('x-request-id',
                                                            coalesce(c.change->>'requestId', caused_by))) END
    FROM (SELECT c.change, c.i, gen_random_uuid() AS id  -- one id per change (a volatile call per row)
          FROM unnest(changes) WITH ORDINALITY AS c(change, i)) c
    ORDER BY c.i;
    -- the feed: '<showtimeId>:<version>:<AVAILABLE|HELD|BOOKED>:<seat>,<seat>...' per change, in version order
    PERFORM must(bool_and(seat_map_status(c.change->>'type') IS NOT NULL), 'a seat-map change of unknown type')
    FROM unnest(changes) AS c(change);
    PERFORM pg_notify(current_schema() || '_seat_map', concat_ws(':', showtime, last - n + c.i,
                          seat_map_status(c.change->>'type'),
                          (SELECT string_agg(seat, ',') FROM jsonb_array_elements_text(c.change->'data'->'seats') seat)))
    FROM unnest(changes) WITH ORDINALITY AS c(change, i);
    PERFORM pg_notify(current_schema() || '_outbox', '');  -- wakes the relay at COMMIT
    RETURN last;
END $$;
