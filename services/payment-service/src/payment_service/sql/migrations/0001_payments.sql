-- Payments, idempotency keys and processed gateway callbacks (payment-service schema).

CREATE TABLE payment (
    payment_id      UUID PRIMARY KEY,          -- also the gateway reference and refund idempotency key
    hold_id         UUID        NOT NULL,
    booking_id      UUID        NOT NULL,
    customer_id     BIGINT      NOT NULL,
    showtime_id     BIGINT      NOT NULL,
    amount_cents    INTEGER     NOT NULL CHECK (amount_cents >= 0),
    discount_cents  INTEGER     NOT NULL DEFAULT 0 CHECK (discount_cents >= 0),
    voucher_code    TEXT,
    status          TEXT        NOT NULL DEFAULT 'PENDING'
                    CHECK (status IN ('PENDING', 'SUCCEEDED', 'FAILED', 'EXPIRED', 'REFUNDED')),
    idempotency_key TEXT        NOT NULL,
    expires_at      TIMESTAMPTZ NOT NULL,
    session_id      TEXT UNIQUE,
    redirect_url    TEXT,
    refund_id       TEXT,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- At most one live payment per hold: two checkouts with different keys must not both charge.
CREATE UNIQUE INDEX payment_one_live_per_hold ON payment (hold_id) WHERE status IN ('PENDING', 'SUCCEEDED');
CREATE INDEX payment_pending_since ON payment (created_at) WHERE status = 'PENDING';

CREATE TABLE idempotency_key (
    customer_id     BIGINT      NOT NULL,
    key             TEXT        NOT NULL,
    request_hash    TEXT        NOT NULL,
    payment_id      UUID        NOT NULL,
    response_status INTEGER,
    response_body   JSONB,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (customer_id, key)
);
CREATE INDEX idempotency_key_created ON idempotency_key (created_at);

-- Gateway callback event ids: the UNIQUE primary key is the de-duplication (kept >= 3 days).
CREATE TABLE gateway_event (
    event_id    TEXT PRIMARY KEY,
    event_type  TEXT        NOT NULL,
    session_id  TEXT,
    received_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX gateway_event_received ON gateway_event (received_at);
