-- depends: 0004_currency
-- The holds hold-service released (SeatsReleased: by their customer, expired, or with their showtime), as
-- this service learnt them: a checkout that kept a hold just before its release records no payment for it.
-- Written by the SeatsReleased handler and read by insert_payment, both under the hold's advisory lock
-- (lock_hold), so the two cannot miss each other. Kept as long as idempotency keys (housekeeping).
CREATE TABLE released_hold (
    hold_id     uuid PRIMARY KEY,
    released_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX released_hold_released_at ON released_hold (released_at);
