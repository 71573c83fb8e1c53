-- hold-service's functions and triggers as they are now: each rule of the hold path stated once.
--
-- Migrations (sql/migrations) make the tables; this file is applied after them by every migration run
-- (ticketing.migrations), so its text is the live definition. Change a rule here, not in a migration; a
-- migration only drops what this file no longer defines (a function whose arguments changed). The test
-- shared/tests/integration/test_schema_files.py fails when the database and this file disagree.
--
-- Every statement may run again on a database that has it: CREATE OR REPLACE, or drop and create.

-- --- Lazy expiry and the cap ---------------------------------------------------------------------

-- A hold is over when its time has passed by Postgres' clock; no job is needed for that to be true.
CREATE OR REPLACE FUNCTION hold_expired(status TEXT, expires_at TIMESTAMPTZ) RETURNS BOOLEAN
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN status = 'HELD' AND expires_at < now();

-- A seat is free when nobody holds it, or when its hold is over: anyone may take it then.
CREATE OR REPLACE FUNCTION seat_is_free(status TEXT, hold_expires_at TIMESTAMPTZ) RETURNS BOOLEAN
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN status = 'AVAILABLE' OR hold_expired(status, hold_expires_at);

-- What the per-customer cap counts: the seats a customer holds now on a showtime.
-- PL/pgSQL, not SQL: Postgres never inlines an SQL function whose body is a subquery, and parses and plans that
-- body again in every statement that calls it (stringToNode, the planner), once per hold in the cap check at
-- COMMIT, with the showtime's row locked (about 0.09 ms of 0.14 a call); PL/pgSQL plans it once per
-- connection. Its callers run in the service's schema (the trigger sets it; take_seats is the service's own
-- statement), where `booking` is this one's.
-- The status is tested in the aggregate, not in WHERE: with `status = 'HELD'` in WHERE, the partial indexes of
-- HELD bookings (booking_held_expiry, booking_live_by_showtime) apply too, and when the statistics say few
-- bookings are HELD they cost the same as the customer's index. The plan, made once per connection, could then
-- read every hold in the database at each hold's COMMIT (migration 0018). Here only booking_by_customer_showtime
-- (or booking_by_customer) fits: the customer's bookings of the showtime.
CREATE OR REPLACE FUNCTION seats_held(customer BIGINT, showtime BIGINT) RETURNS INT
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RETURN (SELECT coalesce(sum(cardinality(b.seats)) FILTER (WHERE b.status = 'HELD'
                                                              AND NOT hold_expired(b.status, b.expires_at)), 0)::int
            FROM booking b WHERE b.customer_id = customer AND b.showtime_id = showtime);
END $$;

-- The cap on the seats one customer holds at once on one showtime (denial of inventory), exact at COMMIT.
-- A hold's statement checks the cap against a snapshot taken when it started, so two holds of one customer
-- running at once would each miss the other. At COMMIT this takes the customer's advisory lock for the
-- showtime (the same customer's holds then commit one after the other) and counts again with a fresh
-- snapshot, this hold included. Over the cap: the commit fails with SQLSTATE HL429, DETAIL 'held frees_in
-- cap' (adapters/repository.py reads it), and nothing of the hold is written. The cap in force is on the
-- booking (seat_cap).
CREATE OR REPLACE FUNCTION check_customer_seat_cap() RETURNS trigger
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    held INT;
    frees_in INT;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(NEW.customer_id::text || ':' || NEW.showtime_id::text, 7));
    held := seats_held(NEW.customer_id, NEW.showtime_id);  -- a fresh snapshot, after the lock
    IF held > NEW.seat_cap THEN
        SELECT ceil(extract(epoch FROM min(expires_at) FILTER (WHERE status = 'HELD'  -- as seats_held, for its plan
                                                                 AND NOT hold_expired(status, expires_at)) - now()))
        INTO frees_in FROM booking
        WHERE customer_id = NEW.customer_id AND showtime_id = NEW.showtime_id AND hold_id <> NEW.hold_id;
        RAISE EXCEPTION 'customer % holds % seats of showtime %; the cap is %', NEW.customer_id,
                        held - cardinality(NEW.seats), NEW.showtime_id, NEW.seat_cap
            USING ERRCODE = 'HL429',
                  DETAIL = (held - cardinality(NEW.seats)) || ' ' || coalesce(frees_in, 1) || ' ' || NEW.seat_cap;
    END IF;
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS booking_customer_cap_at_commit ON booking;
CREATE CONSTRAINT TRIGGER booking_customer_cap_at_commit
    AFTER INSERT ON booking
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.seat_cap IS NOT NULL)
    EXECUTE FUNCTION check_customer_seat_cap();

-- --- Sales ------------------------------------------------------------------------------------------

-- A showtime sells seats while it is not cancelled and until `close_minutes` (SALES_CLOSE_MINUTES_BEFORE_START)
-- before its start, by Postgres' clock: a hold and a checkout's extension are refused after that.
CREATE OR REPLACE FUNCTION on_sale(status TEXT, starts_at TIMESTAMPTZ, close_minutes FLOAT8) RETURNS BOOLEAN
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN status = 'ON_SALE' AND now() < starts_at - close_minutes * interval '1 minute';

-- --- Small helpers ---------------------------------------------------------------------------------

-- Abort the statement, and so its transaction, when a condition its row locks guarantee is false.
CREATE OR REPLACE FUNCTION must(condition BOOLEAN, message TEXT) RETURNS BOOLEAN
    LANGUAGE plpgsql AS $$
BEGIN
    IF condition IS NOT TRUE THEN
        RAISE EXCEPTION 'invariant broken: %', message;
    END IF;
    RETURN true;
END $$;

-- ISO-8601 UTC with microseconds, as the event catalogue reads times.
-- STABLE, as to_char is: Postgres inlines an SQL function into the statement that calls it only when the body is
-- no more volatile than the function says; declared IMMUTABLE it was parsed and planned again in every
-- statement that called it (each hold's SeatsHeld, each batch of events). seat_map_change likewise.
CREATE OR REPLACE FUNCTION iso_utc(t TIMESTAMPTZ) RETURNS TEXT
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');

-- --- Seat-map changes and their events ----------------------------------------------------------------

-- One change of a seat map, for append_seat_map_events: its event's type, booking, customer, data, and the
-- headers naming what caused it (`x-request-id`, `traceparent`: [[name, value], ...], from
-- ticketing.envelope.caused_by).
CREATE OR REPLACE FUNCTION seat_map_change(event_type TEXT, booking UUID, customer BIGINT, data JSONB,
                                           caused_by JSONB) RETURNS JSONB
    LANGUAGE sql STABLE PARALLEL SAFE  -- as jsonb_build_object is (iso_utc says why)
    RETURN jsonb_build_object('type', event_type, 'booking', booking, 'customer', customer, 'data', data,
                              'causedBy', coalesce(caused_by, '[]'));

-- The status a seat-map event gives the seats it names.
CREATE OR REPLACE FUNCTION seat_map_status(event_type TEXT) RETURNS TEXT
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE event_type WHEN 'SeatsHeld' THEN 'HELD' WHEN 'SeatsReleased' THEN 'AVAILABLE'
                           WHEN 'BookingConfirmed' THEN 'BOOKED' WHEN 'BookingCancelled' THEN 'AVAILABLE' END;

-- The one writer of seat-map changes (SeatsHeld, SeatsReleased, BookingConfirmed, BookingCancelled); writers
-- call it last in their one statement. Each change (a seat_map_change value) becomes one outbox row in `form`:
-- the event envelope and headers of the event catalogue (ticketing.envelope.sql_form: the topic, the envelope's
-- constant fields, each header as [name, envelope field, constant]), then the change's own cause headers.
--
-- A change's seatMapVersion is given after its COMMIT (form "versionsAfterCommit", which this release's callers
-- set): the row is written `pending`, without it, and number_seat_map_changes numbers the pending rows a moment
-- later in a short transaction of its own, which also tells the API processes (NOTIFY). So a hold does not lock
-- its showtime's row, nor send a NOTIFY (PostgreSQL commits the transactions that notified one at a time, in the
-- whole server), until its COMMIT: the holds of one showtime commit side by side. The showtime's row is only
-- read, under FOR KEY SHARE, which the booking's foreign key takes anyway: a cancellation (FOR UPDATE, sql
-- holds.sql cancel_showtime) waits for the holds that read it before, and the holds after it see it.
-- Versions stay one per change, gapless, in the order the changes of each seat were made (number_seat_map_changes
-- says why).
--
-- Callers that do not set the flag (the previous release's pods, during an upgrade or after a rollback) get the
-- versions in their transaction, as that release did: the pending changes are numbered first (under the
-- numbering's lock, kept to COMMIT), then theirs, after them, with the showtime's row locked to COMMIT.
--
-- Returns NULL when there is no change; else the number of changes (after COMMIT) or the last version (in the
-- transaction). A hold (SeatsHeld) or a booking (BookingConfirmed) of a cancelled showtime fails here with
-- SQLSTATE HL409 (adapters/repository.py reads it), so nothing of it is written.
CREATE OR REPLACE FUNCTION append_seat_map_events(showtime BIGINT, changes JSONB[], form JSONB) RETURNS BIGINT
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    n INT := coalesce(cardinality(changes), 0);
    later BOOLEAN := coalesce((form->>'versionsAfterCommit')::boolean, false);
    last BIGINT;
    state TEXT;
    -- {"currency": ...} for an event that carries an amount, when the caller's form asks for it (the previous
    -- release's does not: its consumers refuse a field they do not know); {} when the showtime has none yet
    money JSONB;
    occurred TEXT := iso_utc(clock_timestamp());
BEGIN
    IF n = 0 THEN
        RETURN NULL;
    END IF;
    IF later THEN
        SELECT s.status, jsonb_strip_nulls(jsonb_build_object('currency', s.currency)) INTO state, money
        FROM showtime s WHERE s.showtime_id = append_seat_map_events.showtime
        FOR KEY SHARE;
    ELSE
        PERFORM pg_advisory_xact_lock(seat_map_numbering_key());
        PERFORM stamp_seat_map_versions(NULL);
        UPDATE showtime s SET seat_map_version = s.seat_map_version + n
        WHERE s.showtime_id = append_seat_map_events.showtime
        RETURNING s.seat_map_version, s.status, jsonb_strip_nulls(jsonb_build_object('currency', s.currency))
        INTO last, state, money;
    END IF;
    IF state IS NULL THEN
        RAISE EXCEPTION 'showtime % does not exist', showtime;
    END IF;
    IF state = 'CANCELLED' AND EXISTS (SELECT 1 FROM unnest(changes) c
                                       WHERE c->>'type' IN ('SeatsHeld', 'BookingConfirmed')) THEN
        RAISE EXCEPTION 'showtime % is cancelled', showtime USING ERRCODE = 'HL409';
    END IF;
    INSERT INTO outbox (event_id, topic, message_key, payload, headers, pending)
    SELECT e.id, form->>'topic', e.booking, convert_to(e.envelope::text, 'UTF8'),
           (SELECT jsonb_agg(jsonb_build_array(h->>0, coalesce(h->>2, e.envelope->>(h->>1))) ORDER BY h.i)
            FROM jsonb_array_elements(form->'headers') WITH ORDINALITY AS h(h, i)) || e.caused_by, later
    FROM (SELECT c.i, c.id, c.change->>'booking' AS booking, c.change->'causedBy' AS caused_by,
                 form->'envelope' || jsonb_build_object(
                     'eventId', c.id, 'type', c.change->>'type', 'occurredAt', occurred,
                     'bookingId', c.change->'booking', 'showtimeId', showtime, 'customerId', c.change->'customer',
                     'data', c.change->'data'
                             || CASE WHEN later THEN '{}' ELSE jsonb_build_object('seatMapVersion', last - n + c.i) END
                             || CASE WHEN c.change->'data' ? 'amountCents' AND (form->>'currency')::boolean
                                     THEN money ELSE '{}' END) AS envelope
          FROM (SELECT c.change, c.i, gen_random_uuid() AS id  -- one id per change (a volatile call per row)
                FROM unnest(changes) WITH ORDINALITY AS c(change, i)) c) e
    ORDER BY e.i;
    PERFORM must(bool_and(seat_map_status(c.change->>'type') IS NOT NULL), 'a seat-map change of unknown type')
    FROM unnest(changes) AS c(change);
    IF later THEN
        RETURN n;
    END IF;
    PERFORM pg_notify(current_schema() || '_seat_map', concat_ws(':', showtime, last - n + c.i,
                          seat_map_status(c.change->>'type'),
                          (SELECT string_agg(seat, ',') FROM jsonb_array_elements_text(c.change->'data'->'seats') seat)))
    FROM unnest(changes) WITH ORDINALITY AS c(change, i);
    PERFORM pg_notify(current_schema() || '_outbox', '');  -- wakes the relay at COMMIT
    RETURN last;
END $$;

-- --- Seat-map versions, after COMMIT ---------------------------------------------------------------------

-- The lock one numbering of a schema's seat-map changes holds at a time (a transaction-level advisory lock).
CREATE OR REPLACE FUNCTION seat_map_numbering_key() RETURNS BIGINT
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN hashtextextended(current_schema() || '.seat-map-versions', 0);

-- Number the pending seat-map changes (up to `most`, NULL: all), oldest outbox row first: each showtime's
-- seat_map_version grows by its changes, each change's event gets its seatMapVersion and is released to the
-- relay, and each is told on the channel `<schema>_seat_map` as '<showtimeId>:<version>:<status>:<seat>,...'
-- (the API processes keep their seat maps from it: adapters/seat_map_feed.py; Postgres delivers notifications
-- at COMMIT, and the numberings commit one after another). The caller holds the numbering's lock. Returns how many.
--
-- Why outbox order is the order a seat map needs: two changes of one seat are made one after the other (the
-- second locks the seat's row, which the first held to its COMMIT), and the second's outbox row is written after
-- that lock, so after the first's COMMIT: it has the higher id, and any numbering that sees it sees the first.
-- A row with a lower id still uncommitted when a later one is numbered changes other seats: its version comes
-- later than the later row's, and applying the two in either order gives the same map.
CREATE OR REPLACE FUNCTION stamp_seat_map_versions(most INT) RETURNS INT
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    done INT;
    wanted INT;
    notices TEXT[];
    told TEXT;
BEGIN
    WITH waiting AS MATERIALIZED (
        SELECT o.id, convert_from(o.payload, 'UTF8')::jsonb AS envelope
        FROM outbox o WHERE o.pending ORDER BY o.id LIMIT most
    ), numbered AS MATERIALIZED (
        SELECT w.id, w.envelope, (w.envelope->>'showtimeId')::bigint AS showtime_id,
               row_number() OVER (PARTITION BY w.envelope->>'showtimeId' ORDER BY w.id) AS k
        FROM waiting w
    ), bumped AS (
        UPDATE showtime s SET seat_map_version = s.seat_map_version + c.n
        FROM (SELECT showtime_id, count(*) AS n FROM numbered GROUP BY showtime_id) c
        WHERE s.showtime_id = c.showtime_id
        RETURNING s.showtime_id, s.seat_map_version - c.n AS base
    ), stamped AS (
        UPDATE outbox o
        SET pending = false,
            payload = convert_to(jsonb_set(n.envelope, '{data,seatMapVersion}', to_jsonb(b.base + n.k))::text, 'UTF8')
        FROM numbered n JOIN bumped b USING (showtime_id)
        WHERE o.id = n.id
        RETURNING o.id, concat_ws(':', n.showtime_id, b.base + n.k, seat_map_status(n.envelope->>'type'),
                                  (SELECT string_agg(seat, ',')
                                   FROM jsonb_array_elements_text(n.envelope->'data'->'seats') seat)) AS notice
    )
    SELECT count(*), array_agg(notice ORDER BY id), (SELECT count(*) FROM numbered)
    INTO done, notices, wanted FROM stamped;
    PERFORM must(done = wanted, 'a pending seat-map change whose showtime does not exist');
    FOREACH told IN ARRAY coalesce(notices, '{}') LOOP
        PERFORM pg_notify(current_schema() || '_seat_map', told);
    END LOOP;
    IF done > 0 THEN
        PERFORM pg_notify(current_schema() || '_outbox', '');  -- wakes the relay at COMMIT
    END IF;
    RETURN done;
END $$;

-- What the service's numberers call (adapters/seat_map_versions.py): number up to `most` pending changes, unless
-- there are none or another numbering holds the lock (it will see these too, or its next round will). Returns how
-- many it numbered.
CREATE OR REPLACE FUNCTION number_seat_map_changes(most INT) RETURNS INT
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM outbox WHERE pending) OR NOT pg_try_advisory_xact_lock(seat_map_numbering_key()) THEN
        RETURN 0;
    END IF;
    RETURN stamp_seat_map_versions(most);
END $$;

-- --- The end of a hold ---------------------------------------------------------------------------------

-- Why a HELD hold ends: EXPIRED once its time has passed, whatever the caller asked; else the caller's reason.
CREATE OR REPLACE FUNCTION end_reason(status TEXT, expires_at TIMESTAMPTZ, asked TEXT) RETURNS TEXT
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN CASE WHEN hold_expired(status, expires_at) THEN 'EXPIRED' ELSE asked END;

-- End HELD holds, any number in one statement: free the seats each still holds (a seat another hold took
-- after it expired is that hold's), mark it RELEASED (cancelled) or EXPIRED (its time passed, whatever the
-- caller asked), and record one SeatsReleased per hold naming only the seats it freed (none freed: the seat
-- map did not change, no event). Locks the bookings (in hold-id order; a caller that claimed them with SKIP
-- LOCKED holds them already), then all their seats in (showtime, seat-code) order, then each showtime's row
-- in showtime order (append_seat_map_events, called last per showtime): every path locks booking, seats,
-- showtime, so two callers never wait on each other in a cycle. A showtime's SeatsReleased take its next
-- versions in the order of the holds' expiry. Returns one row per hold that was HELD (the others: no row).
-- For the customer's cancel (CANCELLED), the sweeper (EXPIRED) and a cancelled showtime (SHOWTIME_CANCELLED:
-- the hold is RELEASED).
CREATE OR REPLACE FUNCTION release_holds(holds UUID[], cancel_reason TEXT, form JSONB, caused_by JSONB,
                                         OUT hold_id UUID, OUT showtime_id BIGINT, OUT seats TEXT[],
                                         OUT reason TEXT, OUT freed TEXT[], OUT version BIGINT)
    RETURNS SETOF RECORD LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    ended booking[];
    freed_of JSONB;
    version_of JSONB := '{}';
    st BIGINT;
    ids UUID[];
    changes JSONB[];
    last BIGINT;
BEGIN
    -- The status test is written `(...) IS TRUE` so that the plan kept by the connection finds the holds by their
    -- key: with a plain `status = 'HELD'` PostgreSQL may read the whole partial index booking_held_expiry instead
    -- (every hold in the database), which looks cheapest when the statistics were made with few holds
    -- (test_key_lookup_plans.py; seats_held says more).
    ended := ARRAY(SELECT bk FROM booking bk WHERE bk.hold_id = ANY(holds) AND (bk.status = 'HELD') IS TRUE
                   ORDER BY bk.hold_id FOR UPDATE);
    IF cardinality(ended) = 0 THEN
        RETURN;
    END IF;
    PERFORM 1 FROM show_seat s, unnest(ended) e
    WHERE s.showtime_id = e.showtime_id AND s.seat_code = ANY(e.seats)
    ORDER BY s.showtime_id, s.seat_code FOR UPDATE OF s;
    WITH f AS (
        UPDATE show_seat s
        SET status = 'AVAILABLE', hold_id = NULL, customer_id = NULL, hold_expires_at = NULL, booking_id = NULL
        FROM unnest(ended) e
        WHERE s.showtime_id = e.showtime_id AND s.seat_code = ANY(e.seats) AND s.hold_id = e.hold_id
          AND s.status = 'HELD'
        RETURNING e.hold_id AS h, s.seat_code
    ), per_hold AS (
        SELECT f.h, array_agg(f.seat_code ORDER BY f.seat_code) AS codes FROM f GROUP BY f.h
    )
    SELECT coalesce(jsonb_object_agg(per_hold.h, per_hold.codes), '{}') INTO freed_of FROM per_hold;
    UPDATE booking bk
    SET status = CASE WHEN end_reason(e.status, e.expires_at, release_holds.cancel_reason) = 'EXPIRED'
                      THEN 'EXPIRED' ELSE 'RELEASED' END,
        updated_at = now()
    FROM unnest(ended) e
    WHERE bk.hold_id = e.hold_id;
    FOR st, ids, changes IN
        SELECT e.showtime_id,
               array_agg(e.hold_id ORDER BY e.expires_at, e.hold_id),
               array_agg(seat_map_change('SeatsReleased', e.booking_id, e.customer_id,
                             jsonb_build_object('holdId', e.hold_id, 'seats', freed_of -> e.hold_id::text,
                                                'reason', end_reason(e.status, e.expires_at,
                                                                     release_holds.cancel_reason)),
                             caused_by) ORDER BY e.expires_at, e.hold_id)
        FROM unnest(ended) e
        WHERE freed_of ? e.hold_id::text
        GROUP BY e.showtime_id
        ORDER BY e.showtime_id
    LOOP
        last := append_seat_map_events(st, changes, form);
        SELECT version_of || jsonb_object_agg(i.h, last - cardinality(ids) + i.n) INTO version_of
        FROM unnest(ids) WITH ORDINALITY AS i(h, n);
    END LOOP;
    RETURN QUERY
    SELECT e.hold_id, e.showtime_id, e.seats,
           end_reason(e.status, e.expires_at, release_holds.cancel_reason),
           coalesce(ARRAY(SELECT jsonb_array_elements_text(freed_of -> e.hold_id::text)), '{}'),
           (version_of ->> e.hold_id::text)::bigint
    FROM unnest(ended) e
    ORDER BY e.showtime_id, e.expires_at, e.hold_id;
END $$;

-- One hold's end (release_holds); no row when it is not HELD.
CREATE OR REPLACE FUNCTION release_hold(hold UUID, cancel_reason TEXT, form JSONB, caused_by JSONB,
                                        OUT showtime_id BIGINT, OUT seats TEXT[], OUT reason TEXT,
                                        OUT freed TEXT[], OUT version BIGINT)
    RETURNS SETOF RECORD LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY SELECT r.showtime_id, r.seats, r.reason, r.freed, r.version
                 FROM release_holds(ARRAY[hold], cancel_reason, form, caused_by) r;
END $$;

-- A payment for a HELD hold that has not expired: its seats and the hold become BOOKED and
-- BookingConfirmed records the amount paid and the discount, and what the ticket shows: the film, cinema, hall,
-- start, time zone and each seat's ticket (each left out when not known). Returns the version, or NULL when
-- the hold cannot be booked, its showtime cancelled included (then nothing changed). The caller holds the
-- booking row's lock.
CREATE OR REPLACE FUNCTION confirm_hold(hold UUID, payment UUID, paid_cents INT, form JSONB, caused_by JSONB)
    RETURNS BIGINT LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    b booking;
    st showtime;
    booked INT;
BEGIN
    SELECT * INTO b FROM booking WHERE hold_id = hold FOR UPDATE;
    IF NOT FOUND OR b.status <> 'HELD' OR hold_expired(b.status, b.expires_at) THEN
        RETURN NULL;
    END IF;
    SELECT * INTO st FROM showtime WHERE showtime_id = b.showtime_id;
    IF st.status = 'CANCELLED' THEN
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
                                          'paymentId', payment)
                       || jsonb_strip_nulls(jsonb_build_object(
                              'title', st.title, 'cinema', st.cinema, 'hall', st.hall,
                              'startsAt', iso_utc(st.starts_at), 'timeZone', st.time_zone,
                              'tickets', CASE WHEN jsonb_array_length(b.tickets) > 0 THEN b.tickets END)),
        caused_by)], form);
END $$;

-- A BOOKED booking becomes CANCELLED (`cancel_reason` CUSTOMER or SHOWTIME_CANCELLED): its seats are AVAILABLE
-- again and BookingCancelled names them and the payment to refund in full. A customer's cancellation only
-- while the showtime starts more than `deadline_minutes` from now. Locks the booking, then its seats in
-- seat-code order, then (in append_seat_map_events) the showtime's row, as every path does. `outcome`:
-- CANCELLED (done now), ALREADY (cancelled before: nothing changes), NOT_BOOKED (not a booking yet, or over),
-- TOO_LATE (nothing changes), NOT_FOUND.
CREATE OR REPLACE FUNCTION cancel_booking(booking UUID, cancel_reason TEXT, deadline_minutes FLOAT8, form JSONB,
                                          caused_by JSONB, OUT outcome TEXT, OUT hold_id UUID,
                                          OUT showtime_id BIGINT, OUT seats TEXT[], OUT version BIGINT)
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    b booking;
    freed INT;
BEGIN
    SELECT * INTO b FROM booking bk WHERE bk.booking_id = booking FOR UPDATE;
    IF NOT FOUND THEN
        outcome := 'NOT_FOUND';
        RETURN;
    END IF;
    hold_id := b.hold_id;
    showtime_id := b.showtime_id;
    seats := b.seats;
    IF b.status <> 'BOOKED' THEN
        outcome := CASE b.status WHEN 'CANCELLED' THEN 'ALREADY' ELSE 'NOT_BOOKED' END;
        RETURN;
    END IF;
    IF cancel_reason = 'CUSTOMER' AND NOT EXISTS (
            SELECT 1 FROM showtime s WHERE s.showtime_id = b.showtime_id
                                       AND now() < s.starts_at - deadline_minutes * interval '1 minute') THEN
        outcome := 'TOO_LATE';
        RETURN;
    END IF;
    PERFORM 1 FROM show_seat s
    WHERE s.showtime_id = b.showtime_id AND s.seat_code = ANY(b.seats) ORDER BY s.seat_code FOR UPDATE;
    WITH f AS (
        UPDATE show_seat s
        SET status = 'AVAILABLE', hold_id = NULL, customer_id = NULL, hold_expires_at = NULL, booking_id = NULL
        WHERE s.showtime_id = b.showtime_id AND s.seat_code = ANY(b.seats) AND s.hold_id = b.hold_id
          AND s.status = 'BOOKED'
        RETURNING 1
    )
    SELECT count(*) INTO freed FROM f;
    PERFORM must(freed = cardinality(b.seats), 'a booking owns all its seats');
    UPDATE booking bk SET status = 'CANCELLED', cancelled_at = now(), cancel_reason = cancel_booking.cancel_reason,
                          updated_at = now()
    WHERE bk.hold_id = b.hold_id;
    version := append_seat_map_events(b.showtime_id, ARRAY[seat_map_change('BookingCancelled', b.booking_id,
        b.customer_id, jsonb_build_object('holdId', b.hold_id, 'seats', b.seats, 'reason', cancel_reason,
                                          'paymentId', b.payment_id), caused_by)], form);
    outcome := 'CANCELLED';
END $$;

-- --- Best available and the no-lone-seat rule --------------------------------------------------------------

-- The free seats a hold of `seats` would strand: a free seat beside one of them whose other neighbours (same
-- row, x +- 1: a gap or a row's end is no neighbour) would all be taken or missing. Read from the statement's
-- snapshot: a caller that must be exact has locked the seats two places either side of `seats` first.
CREATE OR REPLACE FUNCTION lone_seats(for_showtime BIGINT, seats TEXT[]) RETURNS TEXT[]
    LANGUAGE sql STABLE
    RETURN (
        WITH asked AS (
            SELECT row_name, x FROM show_seat WHERE showtime_id = for_showtime AND seat_code = ANY(seats)
        ), beside AS (
            SELECT DISTINCT f.seat_code, f.row_name, f.x FROM show_seat f JOIN asked a
                ON f.showtime_id = for_showtime AND f.row_name = a.row_name AND f.x IN (a.x - 1, a.x + 1)
            WHERE f.seat_code <> ALL(seats) AND seat_is_free(f.status, f.hold_expires_at)
        )
        SELECT coalesce(array_agg(b.seat_code ORDER BY b.seat_code), '{}') FROM beside b
        WHERE NOT EXISTS (SELECT 1 FROM show_seat o
                          WHERE o.showtime_id = for_showtime AND o.row_name = b.row_name AND o.x IN (b.x - 1, b.x + 1)
                            AND o.seat_code <> ALL(seats) AND seat_is_free(o.status, o.hold_expires_at)));

-- The free runs of `wanted` side-by-side seats of `wanted_category` (one row, one block: adjacency is by place,
-- so a gap or another category splits a run), best first: runs that strand no seat (as lone_seats would say of
-- the run, test_best_available.py compares them) before those that do, then by the sum of the seats' ranks; at most `tries`. Read from the statement's snapshot, taking no
-- lock.
CREATE OR REPLACE FUNCTION seat_runs(for_showtime BIGINT, wanted INT, wanted_category TEXT, tries INT)
    RETURNS TABLE (row_name TEXT, first_x INT, last_x INT, codes TEXT[], strands BOOLEAN)
    LANGUAGE sql STABLE AS $$
    WITH every AS (
        -- each seat with whether the seats one and two places to its left and right are free (lone_seats'
        -- question for a run, asked once per seat by window instead of once per run)
        SELECT seat_code, row_name, x, rank, category, seat_is_free(status, hold_expires_at) AS free,
               coalesce(lag(x) OVER p = x - 1 AND lag(seat_is_free(status, hold_expires_at)) OVER p, false) AS l1,
               coalesce(lag(x, 2) OVER p = x - 2 AND lag(seat_is_free(status, hold_expires_at), 2) OVER p, false) AS l2,
               coalesce(lead(x) OVER p = x + 1 AND lead(seat_is_free(status, hold_expires_at)) OVER p, false) AS r1,
               coalesce(lead(x, 2) OVER p = x + 2 AND lead(seat_is_free(status, hold_expires_at), 2) OVER p, false)
                   AS r2
        FROM show_seat
        WHERE showtime_id = for_showtime
        WINDOW p AS (PARTITION BY row_name ORDER BY x)
    ), free AS (
        SELECT *, x - row_number() OVER (PARTITION BY row_name ORDER BY x) AS island
        FROM every WHERE free AND category = wanted_category
    ), runs AS (
        SELECT row_name, x AS first_x, max(x) OVER w AS last_x, count(*) OVER w AS n,
               array_agg(seat_code::text) OVER w AS codes, sum(rank) OVER w AS score,
               (l1 AND NOT l2) OR (last_value(r1) OVER w AND NOT last_value(r2) OVER w) AS strands
        FROM free
        WINDOW w AS (PARTITION BY row_name, island ORDER BY x ROWS BETWEEN CURRENT ROW AND wanted - 1 FOLLOWING)
    )
    SELECT r.row_name, r.first_x, r.last_x, r.codes, r.strands
    FROM runs r
    WHERE r.n = wanted
    ORDER BY r.strands, r.score, r.row_name, r.first_x
    LIMIT tries
$$;

-- The run take_seats suggests to a hold that would strand a seat: the best of seat_runs that strands nobody.
-- A function of its own, so that take_seats' plan holds a call and not the inlined seat_runs: PostgreSQL does not
-- inline an SQL function whose body is a subquery, and every execution of a statement initialises every node of
-- its plan, run or not (seat_runs' sorts and windows were about a tenth of a granted hold's database CPU).
CREATE OR REPLACE FUNCTION suggested_run(for_showtime BIGINT, wanted INT, wanted_category TEXT) RETURNS TEXT[]
    LANGUAGE sql STABLE
    RETURN (SELECT r.codes FROM seat_runs(for_showtime, wanted, wanted_category, 20) r WHERE NOT r.strands LIMIT 1);

-- Best available: the first run of seat_runs that is still free and, under the showtime's no-lone-seat rule,
-- strands nobody. The runs are read from a snapshot, so concurrent requests see the same order; each tries
-- them in turn and locks a run WITHOUT waiting (SKIP LOCKED): a run whose rows another request is deciding is
-- passed over, not queued for, so concurrent requests spread over the runs instead of all fighting for the
-- first. Under the rule it locks the two seats either side of the run too: whether a seat beside the run is
-- left alone depends on them, and no other request may change them meanwhile (a picked hold takes only its
-- own seats' locks: docs/best-available.md says what that leaves open). Once it holds every row, a new
-- statement (a new snapshot: whatever committed before the locks were granted) checks the run again; the
-- rows it locked stay locked to the end of the transaction, where take_seats takes them (its conditional
-- UPDATE remains the guard). `{}`: none of the first `tries` runs is free now (the caller answers 409).
-- NULL: no such showtime.
CREATE OR REPLACE FUNCTION choose_seats(for_showtime BIGINT, wanted INT, wanted_category TEXT, tries INT)
    RETURNS TEXT[]
    LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    rule BOOLEAN;
    reach INT;  -- how many seats either side of a run are locked with it
    run RECORD;
    locked INT;
    present INT;
BEGIN
    SELECT s.no_lone_seat INTO rule FROM showtime s WHERE s.showtime_id = for_showtime;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    reach := CASE WHEN rule THEN 2 ELSE 0 END;
    FOR run IN SELECT * FROM seat_runs(for_showtime, wanted, wanted_category, tries) LOOP
        SELECT count(*) INTO locked FROM (
            SELECT 1 FROM show_seat a
            WHERE a.showtime_id = for_showtime AND a.row_name = run.row_name
              AND a.x BETWEEN run.first_x - reach AND run.last_x + reach
            ORDER BY a.seat_code
            FOR UPDATE SKIP LOCKED) l;
        SELECT count(*) INTO present FROM show_seat a
        WHERE a.showtime_id = for_showtime AND a.row_name = run.row_name
          AND a.x BETWEEN run.first_x - reach AND run.last_x + reach;
        CONTINUE WHEN locked < present;  -- another request is deciding some of it: the next run
        CONTINUE WHEN EXISTS (SELECT 1 FROM show_seat a WHERE a.showtime_id = for_showtime
                                AND a.seat_code = ANY(run.codes) AND NOT seat_is_free(a.status, a.hold_expires_at));
        CONTINUE WHEN rule AND cardinality(lone_seats(for_showtime, run.codes)) > 0;
        RETURN run.codes;
    END LOOP;
    RETURN '{}';
END $$;

-- Best available, not together: the `wanted` best free seats of `wanted_category` (by rank, so nearest each
-- other around the hall's best place), each locked without waiting (a seat another request is deciding is
-- passed over); `{}` when fewer are free now, NULL: no such showtime. The rows stay locked for take_seats.
CREATE OR REPLACE FUNCTION choose_scattered_seats(for_showtime BIGINT, wanted INT, wanted_category TEXT)
    RETURNS TEXT[]
    LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    got TEXT[];
BEGIN
    PERFORM 1 FROM showtime s WHERE s.showtime_id = for_showtime;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT array_agg(seat_code) INTO got FROM (
        SELECT seat_code FROM show_seat
        WHERE showtime_id = for_showtime AND category = wanted_category AND seat_is_free(status, hold_expires_at)
        ORDER BY rank, seat_code
        LIMIT wanted
        FOR UPDATE SKIP LOCKED) l;
    RETURN CASE WHEN cardinality(got) = wanted THEN got ELSE '{}' END;
END $$;
