-- Showtimes, their seats and the holds (bookings) on them.
-- show_seat is the source of truth for who holds a seat: one conditional UPDATE decides a hold,
-- lazy expiry (`status = 'HELD' AND hold_expires_at < now()`) means no job is needed for correctness.

CREATE TABLE showtime (
    showtime_id      BIGINT PRIMARY KEY,
    title            TEXT        NOT NULL,
    starts_at        TIMESTAMPTZ NOT NULL,
    price_cents      INTEGER     NOT NULL CHECK (price_cents >= 0),
    seat_map_version BIGINT      NOT NULL DEFAULT 0,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE show_seat (
    showtime_id     BIGINT      NOT NULL REFERENCES showtime (showtime_id),
    seat_code       VARCHAR(8)  NOT NULL,
    status          VARCHAR(16) NOT NULL DEFAULT 'AVAILABLE'
                    CHECK (status IN ('AVAILABLE', 'HELD', 'BOOKED')),
    hold_id         UUID,
    customer_id     BIGINT,
    hold_expires_at TIMESTAMPTZ,
    booking_id      UUID,
    PRIMARY KEY (showtime_id, seat_code),
    CHECK ((status = 'AVAILABLE') = (hold_id IS NULL))
);
CREATE INDEX show_seat_hold ON show_seat (hold_id);

CREATE TABLE booking (
    hold_id      UUID PRIMARY KEY,
    booking_id   UUID        NOT NULL UNIQUE,
    customer_id  BIGINT      NOT NULL,
    showtime_id  BIGINT      NOT NULL REFERENCES showtime (showtime_id),
    seats        TEXT[]      NOT NULL,
    amount_cents INTEGER     NOT NULL,
    status       TEXT        NOT NULL CHECK (status IN ('HELD', 'BOOKED', 'RELEASED', 'EXPIRED')),
    expires_at   TIMESTAMPTZ NOT NULL,
    payment_id   UUID UNIQUE,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX booking_active_by_customer ON booking (customer_id, showtime_id) WHERE status = 'HELD';
CREATE INDEX booking_held_expiry ON booking (expires_at) WHERE status = 'HELD';

-- First response of a POST /holds per (customer, Idempotency-Key), kept >= 24 h.
CREATE TABLE idempotency_key (
    customer_id  BIGINT      NOT NULL,
    key          TEXT        NOT NULL,
    request_hash TEXT        NOT NULL,
    status_code  INTEGER,
    body         JSONB,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (customer_id, key)
);
CREATE INDEX idempotency_key_created ON idempotency_key (created_at);
