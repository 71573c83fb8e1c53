-- A booking event the notifier could send no e-mail for: no address in the directory, and none from the buyer's
-- identity provider (hold-service's buyer contacts). Counted (notifier_bookings_without_address_total), alerted
-- on, and listed by `python -m notifier.entrypoints.cli.customers missing`, not only logged; the operator adds
-- the address (`customers add`) and re-sends. One row per booking event.
-- depends: 0003_bookings_and_cancellations
CREATE TABLE booking_without_address (
    event_id     UUID        PRIMARY KEY,
    booking_id   UUID        NOT NULL,
    customer_id  BIGINT      NOT NULL,
    event_type   TEXT        NOT NULL,
    recorded_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX booking_without_address_recorded ON booking_without_address (recorded_at);
