-- depends: 0014_waiting_room_auto
-- Best available seats and the no-lone-seat rule (docs/best-available.md).
--
-- - show_seat.rank: how good the seat is for best available (lower is better), written with the hall when the
--   showtime is created (domain/hall.py: rows from the middle outwards, seats from the row's centre outwards,
--   or the rows' own ranks from the layout). A run of seats is as good as the sum of its ranks.
-- - showtime.no_lone_seat: no hold may leave a single free seat between taken seats or at a row's end.
-- - show_seat_place: the seats beside a seat (same row, x +- 1 or 2) are found by their place, both when a
--   choice locks a run with its neighbours and when the rule looks for a stranded seat.
ALTER TABLE show_seat ADD COLUMN rank INTEGER NOT NULL DEFAULT 0;
ALTER TABLE showtime ADD COLUMN no_lone_seat BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX show_seat_place ON show_seat (showtime_id, row_name, x);
