-- depends: 0004_hold_rules_once
-- append_seat_map_events (migration 0004) written set-based, and with the request id:
-- - the showtime's version row is updated once for all the changes of a statement (a wave's batch makes a
--   few hundred: one UPDATE each was most of the batch's time with that row locked), and the outbox rows are
--   one INSERT, in the changes' order (versions last - n + 1 .. last, ids in the same order);
-- - each event carries the `x-request-id` header of the request or event that caused it: the change's own
--   `requestId` (the hold writer's batches mix requests), else the transaction's `ticketing.request_id`
--   setting (set by the repository before a cancel or a payment's confirmation), else none.
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
    PERFORM pg_notify(current_schema() || '_outbox', '');  -- wakes the relay at COMMIT
    RETURN last;
END $$;
