-- depends: 0007_seat_map_events_set_based
-- The seat-map feed's notifications (migration 0006) sent by append_seat_map_events, the one writer of
-- seat-map changes, from the values it already has: one pg_notify per change, in version order, as before
-- (same channel, same payload, delivered at COMMIT in commit order). The trigger they replace ran once per
-- outbox row and parsed the row's payload back into JSON: in a wave's batch a large share of the statement,
-- all of it with the showtime's version row locked (make bench-wave).
-- append_seat_map_events, the writer that sends them, is sql/schema.sql's now (migration 0010).
DROP TRIGGER seat_map_change_notified ON outbox;
DROP FUNCTION notify_seat_map_change();
