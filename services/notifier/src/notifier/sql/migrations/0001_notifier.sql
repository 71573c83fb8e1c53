-- The notifier's own tables: the customer directory, the loyalty-points ledger and the e-mail outbox.
-- depends: 0000_outbox_inbox

CREATE TABLE customer (
    customer_id BIGINT      PRIMARY KEY,
    email       TEXT        NOT NULL CHECK (position('@' IN email) > 1),
    name        TEXT        NOT NULL DEFAULT '',
    locale      TEXT        NOT NULL DEFAULT 'en',
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One row per booking: a redelivered or re-emitted BookingConfirmed cannot credit twice.
CREATE TABLE loyalty_points (
    booking_id   UUID        PRIMARY KEY,
    customer_id  BIGINT      NOT NULL,
    event_id     UUID        NOT NULL,
    amount_cents BIGINT      NOT NULL,
    points       INTEGER     NOT NULL CHECK (points >= 0),
    credited_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX loyalty_points_customer ON loyalty_points (customer_id);

-- E-mails to send, written in the same transaction as the inbox row and the points credit; the
-- sender loop delivers PENDING rows over SMTP and marks them SENT.
CREATE TABLE email_outbox (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id     UUID        NOT NULL,
    kind         TEXT        NOT NULL CHECK (kind IN ('ticket', 'refund', 'booking_failed')),
    booking_id   UUID        NOT NULL,
    customer_id  BIGINT      NOT NULL,
    recipient    TEXT        NOT NULL,
    message_id   TEXT        NOT NULL UNIQUE,
    message      BYTEA       NOT NULL,
    status       TEXT        NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'SENT')),
    attempts     INTEGER     NOT NULL DEFAULT 0,
    last_error   TEXT,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    sent_at      TIMESTAMPTZ,
    UNIQUE (event_id, kind)
);
CREATE INDEX email_outbox_pending ON email_outbox (id) WHERE status = 'PENDING';
