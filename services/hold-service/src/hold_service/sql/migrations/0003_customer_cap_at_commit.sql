-- depends: 0002_seat_map_version_at_commit
-- The cap on seats one customer holds at once on one showtime (OWASP "denial of inventory"), made exact
-- at COMMIT so that a hold needs no transaction of its own.
--
-- take_seats checks the cap against the customer's live holds, but a statement reads a snapshot taken
-- when it started: two holds of one customer running at once would each miss the other. This deferred
-- trigger settles that race: it takes the customer's advisory lock for the showtime (held to the end
-- of the transaction, so the same customer's holds commit one after the other) and counts again with a
-- fresh snapshot (each statement of a function does), this hold included. Over the cap: the commit
-- fails with SQLSTATE HL429 and nothing of the hold is written. The cap in force is kept on the booking.

ALTER TABLE booking ADD COLUMN seat_cap INT;

CREATE FUNCTION check_customer_seat_cap() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    held INT;
    frees_in INT;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(NEW.customer_id::text || ':' || NEW.showtime_id::text, 7));
    SELECT coalesce(sum(cardinality(seats)), 0), ceil(extract(epoch FROM min(expires_at) - now()))
    INTO held, frees_in
    FROM booking
    WHERE customer_id = NEW.customer_id AND showtime_id = NEW.showtime_id AND status = 'HELD'
      AND expires_at >= now() AND hold_id <> NEW.hold_id;
    IF held + cardinality(NEW.seats) > NEW.seat_cap THEN
        RAISE EXCEPTION 'customer % holds % seats of showtime %; the cap is %', NEW.customer_id, held,
                        NEW.showtime_id, NEW.seat_cap
            USING ERRCODE = 'HL429', DETAIL = held || ' ' || coalesce(frees_in, 1) || ' ' || NEW.seat_cap;
    END IF;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER booking_customer_cap_at_commit
    AFTER INSERT ON booking
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.seat_cap IS NOT NULL)
    EXECUTE FUNCTION check_customer_seat_cap();
