-- depends: 0004_hold_rules_once
-- The waiting room of a hot showtime: what the operator decided, kept where a Redis loss cannot take it.
--
-- The queue itself (who waits, in which order, who is choosing seats now) lives in Redis and may be lost;
-- this row keeps what must survive that:
-- - enabled / active_limit / opens_at: the operator's configuration (PUT /admin/showtimes/{id}/waiting-room);
-- - admitted_until: a lease. No admission token of this room expires after it: the room extends it here
--   before it admits anyone past it. When Redis has lost the room, nobody is admitted again before it has
--   passed, so the customers admitted before the loss and the ones admitted after are never more than
--   active_limit together.
-- - shuffle_seed: fixed once, when the room opens; the pre-opening joiners' order follows from it, so the
--   shuffle is the same whichever process runs it, and a customer who rejoins after a Redis loss gets his
--   place back.
-- - queue_started_at: when the room's queue was first set up in Redis. A room set up again after that is one
--   Redis lost: only then do tickets from before get their places back.

CREATE TABLE waiting_room (
    showtime_id      BIGINT PRIMARY KEY REFERENCES showtime (showtime_id),
    enabled          BOOLEAN     NOT NULL,
    active_limit     INTEGER     NOT NULL CHECK (active_limit BETWEEN 1 AND 100000),
    opens_at         TIMESTAMPTZ,
    admitted_until   TIMESTAMPTZ,
    shuffle_seed     TEXT,
    queue_started_at TIMESTAMPTZ,
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
