-- depends: 0003_customer_cap_at_commit
-- Each hold rule stated once, as SQL functions that the named queries of sql/holds.sql call:
--
-- - hold_expired / seat_is_free: lazy expiry. A hold is over when its time has passed by Postgres' clock,
--   and its seats are then free for anyone; no job is needed for correctness.
-- - seats_held: what the per-customer cap counts (seats a customer holds now on a showtime).
-- - append_seat_map_events: changes of a showtime's seat map. Each takes the next seatMapVersion (the
--   showtime's row stays locked to the end of the transaction, so versions are one per change, gapless, in
--   commit order) and its booking-events message (docs/events) goes to the outbox, built here where
--   every value is known. Writers call it last in their one statement, so the showtime's row, which every
--   hold of the showtime contends on, is locked only for the statement's tail and its COMMIT.
-- - release_hold / confirm_hold: the end of a hold, for the customer's cancel, the sweeper and payments.
--
-- Replaces migration 0002 (a placeholder in a payload, patched with the version at COMMIT).

DROP TRIGGER seat_map_stamp_at_commit ON seat_map_stamp;
DROP FUNCTION stamp_seat_map_version();
DROP TABLE seat_map_stamp;

CREATE FUNCTION hold_expired(status TEXT, expires_at TIMESTAMPTZ) RETURNS BOOLEAN
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN status = 'HELD' AND expires_at < now();

CREATE FUNCTION seat_is_free(status TEXT, hold_expires_at TIMESTAMPTZ) RETURNS BOOLEAN
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN status = 'AVAILABLE' OR hold_expired(status, hold_expires_at);

CREATE FUNCTION seats_held(customer BIGINT, showtime BIGINT) RETURNS INT
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN (SELECT coalesce(sum(cardinality(b.seats)), 0)::int FROM booking b
            WHERE b.customer_id = customer AND b.showtime_id = showtime AND b.status = 'HELD'
              AND NOT hold_expired(b.status, b.expires_at));

-- Abort the statement, and so its transaction, when a condition its row locks guarantee is false.
CREATE FUNCTION must(condition BOOLEAN, message TEXT) RETURNS BOOLEAN
    LANGUAGE plpgsql AS $$
BEGIN
    IF condition IS NOT TRUE THEN
        RAISE EXCEPTION 'invariant broken: %', message;
    END IF;
    RETURN true;
END $$;

-- ISO-8601 UTC with microseconds, as the event catalogue reads times.
CREATE FUNCTION iso_utc(t TIMESTAMPTZ) RETURNS TEXT
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');

-- changes: [{"type", "booking", "customer", "data"}, ...] in the order their versions go; returns the last
-- version. The envelope and headers are the event catalogue's (shared/src/ticketing/events.py); the
-- contract test checks every message built here against it.
CREATE FUNCTION append_seat_map_events(showtime BIGINT, changes JSONB[]) RETURNS BIGINT
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    change JSONB;
    version BIGINT;
    event_id UUID;
    occurred TEXT := iso_utc(clock_timestamp());
BEGIN
    FOREACH change IN ARRAY changes LOOP
        UPDATE showtime s SET seat_map_version = s.seat_map_version + 1
        WHERE s.showtime_id = append_seat_map_events.showtime
        RETURNING s.seat_map_version INTO version;
        IF version IS NULL THEN
            RAISE EXCEPTION 'showtime % does not exist', showtime;
        END IF;
        event_id := gen_random_uuid();
        INSERT INTO outbox (event_id, topic, message_key, payload, headers)
        VALUES (event_id, 'booking-events', change->>'booking',
                convert_to(jsonb_build_object(
                    'eventId', event_id, 'type', change->>'type', 'version', 1, 'occurredAt', occurred,
                    'source', 'hold-service', 'bookingId', change->'booking', 'showtimeId', showtime,
                    'customerId', change->'customer',
                    'data', change->'data' || jsonb_build_object('seatMapVersion', version))::text, 'UTF8'),
                jsonb_build_array(
                    jsonb_build_array('id', event_id::text), jsonb_build_array('ce_specversion', '1.0'),
                    jsonb_build_array('ce_id', event_id::text), jsonb_build_array('ce_type', change->>'type'),
                    jsonb_build_array('ce_source', 'hold-service'), jsonb_build_array('ce_time', occurred),
                    jsonb_build_array('content-type', 'application/json')));
    END LOOP;
    IF version IS NOT NULL THEN
        PERFORM pg_notify(current_schema() || '_outbox', '');  -- wakes the relay at COMMIT
    END IF;
    RETURN version;
END $$;

CREATE FUNCTION seat_map_change(event_type TEXT, booking UUID, customer BIGINT, data JSONB) RETURNS JSONB
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN jsonb_build_object('type', event_type, 'booking', booking, 'customer', customer, 'data', data);

-- End a HELD hold: free the seats it still holds (a seat another hold took after this one expired is that
-- hold's), mark it RELEASED (cancelled) or EXPIRED (its time passed, whatever the caller asked), and record
-- SeatsReleased naming only the freed seats (none freed: the seat map did not change, no event). Seats are
-- locked in seat-code order after the booking row, as every path does (no deadlock). Returns no row when
-- the hold is not HELD.
CREATE FUNCTION release_hold(hold UUID, cancel_reason TEXT,
                             OUT showtime_id BIGINT, OUT seats TEXT[], OUT reason TEXT, OUT freed TEXT[],
                             OUT version BIGINT)
    RETURNS SETOF RECORD LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    b booking;
BEGIN
    SELECT * INTO b FROM booking WHERE hold_id = hold AND status = 'HELD' FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    showtime_id := b.showtime_id;
    seats := b.seats;
    reason := CASE WHEN hold_expired(b.status, b.expires_at) THEN 'EXPIRED' ELSE cancel_reason END;
    PERFORM 1 FROM show_seat s
    WHERE s.showtime_id = b.showtime_id AND s.seat_code = ANY(b.seats) ORDER BY s.seat_code FOR UPDATE;
    WITH f AS (
        UPDATE show_seat s
        SET status = 'AVAILABLE', hold_id = NULL, customer_id = NULL, hold_expires_at = NULL, booking_id = NULL
        WHERE s.showtime_id = b.showtime_id AND s.seat_code = ANY(b.seats) AND s.hold_id = hold
          AND s.status = 'HELD'
        RETURNING s.seat_code
    )
    SELECT coalesce(array_agg(f.seat_code ORDER BY f.seat_code), '{}') INTO freed FROM f;
    UPDATE booking SET status = CASE reason WHEN 'CANCELLED' THEN 'RELEASED' ELSE 'EXPIRED' END, updated_at = now()
    WHERE hold_id = hold;
    IF cardinality(freed) > 0 THEN
        version := append_seat_map_events(b.showtime_id, ARRAY[seat_map_change('SeatsReleased', b.booking_id,
            b.customer_id, jsonb_build_object('holdId', hold, 'seats', freed, 'reason', reason))]);
    END IF;
    RETURN NEXT;
END $$;

-- A payment for a HELD hold that has not expired: its seats and the hold become BOOKED and
-- BookingConfirmed records the amount paid and the discount. Returns the version, or NULL when the hold
-- cannot be booked (then nothing changed). The caller holds the booking row's lock.
CREATE FUNCTION confirm_hold(hold UUID, payment UUID, paid_cents INT) RETURNS BIGINT
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    b booking;
    booked INT;
BEGIN
    SELECT * INTO b FROM booking WHERE hold_id = hold FOR UPDATE;
    IF NOT FOUND OR b.status <> 'HELD' OR hold_expired(b.status, b.expires_at) THEN
        RETURN NULL;
    END IF;
    WITH s AS (
        UPDATE show_seat SET status = 'BOOKED', hold_expires_at = NULL
        WHERE showtime_id = b.showtime_id AND seat_code = ANY(b.seats) AND hold_id = hold AND status = 'HELD'
        RETURNING 1
    )
    SELECT count(*) INTO booked FROM s;
    IF booked <> cardinality(b.seats) THEN  -- cannot happen while the hold is HELD and live
        RAISE EXCEPTION 'hold % owns % of its % seats', hold, booked, cardinality(b.seats);
    END IF;
    UPDATE booking SET status = 'BOOKED', payment_id = payment, updated_at = now() WHERE hold_id = hold;
    RETURN append_seat_map_events(b.showtime_id, ARRAY[seat_map_change('BookingConfirmed', b.booking_id,
        b.customer_id, jsonb_build_object('holdId', hold, 'seats', b.seats, 'amountCents', paid_cents,
                                          'discountCents', greatest(b.amount_cents - paid_cents, 0),
                                          'paymentId', payment))]);
END $$;

-- The cap's commit-time check of migration 0003, counting with seats_held (this hold included).
CREATE OR REPLACE FUNCTION check_customer_seat_cap() RETURNS trigger
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    held INT;
    frees_in INT;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(NEW.customer_id::text || ':' || NEW.showtime_id::text, 7));
    held := seats_held(NEW.customer_id, NEW.showtime_id);  -- a fresh snapshot, after the lock
    IF held > NEW.seat_cap THEN
        SELECT ceil(extract(epoch FROM min(expires_at) - now())) INTO frees_in FROM booking
        WHERE customer_id = NEW.customer_id AND showtime_id = NEW.showtime_id AND hold_id <> NEW.hold_id
          AND status = 'HELD' AND NOT hold_expired(status, expires_at);
        RAISE EXCEPTION 'customer % holds % seats of showtime %; the cap is %', NEW.customer_id,
                        held - cardinality(NEW.seats), NEW.showtime_id, NEW.seat_cap
            USING ERRCODE = 'HL429',
                  DETAIL = (held - cardinality(NEW.seats)) || ' ' || coalesce(frees_in, 1) || ' ' || NEW.seat_cap;
    END IF;
    RETURN NULL;
END $$;

-- An Idempotency-Key now keeps the domain outcome (the hold, or the seats that were unavailable), not an
-- HTTP body; keys stored before cannot be read that way and are dropped (at most a day of retries).
DELETE FROM idempotency_key;
ALTER TABLE idempotency_key DROP COLUMN status_code;
ALTER TABLE idempotency_key RENAME COLUMN body TO outcome;
