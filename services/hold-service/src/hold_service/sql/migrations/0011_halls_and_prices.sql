-- depends: 0010_schema_file
-- Halls as they are and prices by seat category and ticket type.
-- - showtime: the catalogue's details (duration, cinema, hall, the cinema's time zone) and `prices`
--   {category: {ticketType: cents}}; price_cents stays as the lowest of them (what "from" says). A showtime
--   made with one price has it as STANDARD/ADULT.
-- - show_seat: the seat's category and its place in the hall's drawing (row, x counting the gaps); a seat of
--   the old form is STANDARD, its x its number.
-- - booking: `tickets` [{seat, category, ticketType, priceCents}], written with the hold; amount_cents is
--   their sum. Holds taken before have none (each of their seats was ADULT at price_cents).
ALTER TABLE showtime
    ADD COLUMN duration_minutes INT CHECK (duration_minutes BETWEEN 1 AND 1440),
    ADD COLUMN cinema TEXT,
    ADD COLUMN hall TEXT,
    ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'UTC',
    ADD COLUMN prices JSONB;
UPDATE showtime SET prices = jsonb_build_object('STANDARD', jsonb_build_object('ADULT', price_cents));
ALTER TABLE showtime ALTER COLUMN prices SET NOT NULL,
    ADD CONSTRAINT showtime_prices_object CHECK (jsonb_typeof(prices) = 'object');

ALTER TABLE show_seat
    ADD COLUMN category TEXT NOT NULL DEFAULT 'STANDARD'
        CHECK (category IN ('STANDARD', 'VIP', 'ACCESSIBLE', 'COMPANION')),
    ADD COLUMN row_name TEXT,
    ADD COLUMN x INT;
UPDATE show_seat SET row_name = substring(seat_code FROM '^[A-Z]+'), x = substring(seat_code FROM '[0-9]+$')::int;
ALTER TABLE show_seat ALTER COLUMN row_name SET NOT NULL, ALTER COLUMN x SET NOT NULL;

ALTER TABLE booking ADD COLUMN tickets JSONB NOT NULL DEFAULT '[]';
