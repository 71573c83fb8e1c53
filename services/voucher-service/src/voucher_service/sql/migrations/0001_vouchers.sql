-- Vouchers and their redemptions. Postgres is the final guard: whatever the
-- application or the Redis gate gets wrong, these constraints refuse an oversell.

CREATE TABLE voucher (
    code             VARCHAR(32) PRIMARY KEY,
    discount_amount  BIGINT      NOT NULL CHECK (discount_amount >= 0),
    min_order_amount BIGINT      NOT NULL DEFAULT 0 CHECK (min_order_amount >= 0),
    total_limit      INT         NOT NULL CHECK (total_limit >= 0),
    -- used_count = number of redemptions RESERVED or CONFIRMED (RELEASED ones gave their use back).
    used_count       INT         NOT NULL DEFAULT 0 CHECK (used_count >= 0),
    per_user_limit   INT         NOT NULL DEFAULT 1 CHECK (per_user_limit >= 1),
    starts_at        TIMESTAMPTZ NOT NULL,
    ends_at          TIMESTAMPTZ NOT NULL,
    -- Flash-sale mode: the Redis Lua gate decides, Postgres is written by the voucher-reserved consumer.
    flash_sale       BOOLEAN     NOT NULL DEFAULT false,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT ck_used CHECK (used_count <= total_limit),
    CONSTRAINT ck_window CHECK (starts_at < ends_at),
    -- Target of the composite foreign key below (lets a redemption carry the limit it was taken under).
    CONSTRAINT uq_voucher_code_limit UNIQUE (code, per_user_limit)
);

-- Per-customer limit: the "slot" scheme, enforced by the database for every per_user_limit.
--   A live redemption (RESERVED or CONFIRMED) occupies one slot 0..per_user_limit-1 of its
--   (voucher, customer); the partial unique index below allows one live redemption per slot, and
--   ck_slot keeps slots under the limit. per_user_limit is copied onto the row and tied to the
--   voucher by a composite foreign key (ON UPDATE CASCADE), so the CHECK can see it without a trigger.
--   With per_user_limit = 1 the only slot is 0 and the index IS the seed's
--   UNIQUE (voucher_code, customer_id), restricted to live rows so that a released use can be
--   taken again by the same customer (the seed's plain constraint would block it forever).
-- Why not a usage counter table (voucher_customer_usage.used <= limit)? It would need its own
-- increment/decrement kept in step with every status change; slots derive the count from the
-- redemptions themselves, so there is a single source of truth and nothing to drift.
CREATE TABLE voucher_redemption (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    voucher_code   VARCHAR(32) NOT NULL,
    customer_id    BIGINT      NOT NULL,
    -- The idempotency key of reserve: one order uses one voucher once (retries find this row).
    order_id       VARCHAR(64) NOT NULL,
    order_amount   BIGINT,
    status         VARCHAR(16) NOT NULL CHECK (status IN ('RESERVED', 'CONFIRMED', 'RELEASED')),
    slot           INT         NOT NULL,
    per_user_limit INT         NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    updated_at     TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT uq_redemption_order UNIQUE (order_id),
    CONSTRAINT ck_slot CHECK (slot >= 0 AND slot < per_user_limit),
    CONSTRAINT fk_redemption_voucher FOREIGN KEY (voucher_code, per_user_limit)
        REFERENCES voucher (code, per_user_limit) ON UPDATE CASCADE
);
CREATE UNIQUE INDEX uq_voucher_customer_slot ON voucher_redemption (voucher_code, customer_id, slot)
    WHERE status IN ('RESERVED', 'CONFIRMED');
-- The expiry job's scan: oldest live reservations first.
CREATE INDEX ix_redemption_reserved ON voucher_redemption (created_at) WHERE status = 'RESERVED';
CREATE INDEX ix_redemption_voucher ON voucher_redemption (voucher_code, status);
