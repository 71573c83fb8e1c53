-- depends: 0001_holds
-- A hold's seat-map version is stamped at COMMIT, not when the hold is taken.
--
-- `showtime.seat_map_version` grows by one per change of the seat map (seatMapVersion, docs/events), so every
-- change of one showtime must lock its row: under a sale that row is what all holds wait for. Bumped
-- inside the transaction, it stays locked until the client's next round trips (the event, then COMMIT)
-- come back through a busy event loop; a burst of holds then queues for hundreds of ms (make
-- bench-holds). Stamped by a deferred constraint trigger, it is locked only for the commit itself.
--
-- The hold path appends SeatsHeld to the outbox with a placeholder version and a row here naming the
-- outbox row and the showtime; at COMMIT the trigger bumps the version and writes it into the payload.
-- Versions are still one per change, gapless, in commit order (the row lock orders the stampers), and the
-- relay can only read the payload after COMMIT, so it never sees the placeholder.

CREATE TABLE seat_map_stamp (
    outbox_id   BIGINT NOT NULL,
    showtime_id BIGINT NOT NULL,
    placeholder TEXT   NOT NULL  -- the digits standing for the version in the payload's "seatMapVersion"
);

CREATE FUNCTION stamp_seat_map_version() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    version BIGINT;
BEGIN
    UPDATE showtime SET seat_map_version = seat_map_version + 1
    WHERE showtime_id = NEW.showtime_id
    RETURNING seat_map_version INTO version;
    IF version IS NULL THEN
        RAISE EXCEPTION 'showtime % does not exist', NEW.showtime_id;
    END IF;
    UPDATE outbox
    SET payload = convert_to(replace(convert_from(payload, 'UTF8'), '"seatMapVersion":' || NEW.placeholder,
                                     '"seatMapVersion":' || version), 'UTF8')
    WHERE id = NEW.outbox_id;
    DELETE FROM seat_map_stamp WHERE outbox_id = NEW.outbox_id;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER seat_map_stamp_at_commit
    AFTER INSERT ON seat_map_stamp
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION stamp_seat_map_version();
