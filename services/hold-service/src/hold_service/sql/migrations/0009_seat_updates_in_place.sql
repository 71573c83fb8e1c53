-- depends: 0008_seat_map_feed_from_the_writer
-- A seat's row is updated by every hold, expiry, release and sale of it; let those updates be HOT (heap-only:
-- the new version on the same page, no index entry written):
-- - the index on hold_id goes. Nothing looks seats up by hold: every statement finds them by (showtime_id,
--   seat_code), from the request or from the booking's seats. Because that index covered a column every hold
--   changes, no update of a seat was HOT: each wrote a new entry in both indexes, and a seat looked up by its
--   key walked the index entries of all its versions not yet vacuumed (in make bench-holds, 180 buffers to
--   find one seat; n_tup_hot_upd was 0).
-- - pages keep room for the new versions (fillfactor): a showtime's 300 seats take ~8 pages instead of ~4.
--   It applies to pages written from now on (new showtimes); existing ones get it when rewritten.
DROP INDEX show_seat_hold;
ALTER TABLE show_seat SET (fillfactor = 50);
