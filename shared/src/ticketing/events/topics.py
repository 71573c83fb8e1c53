"""The topics of the event contract and their partitions."""

from __future__ import annotations

BOOKING_EVENTS = "booking-events"
VOUCHER_RESERVED = "voucher-reserved"
VOUCHER_RESERVED_DLQ = "voucher-reserved.DLQ"
BOOKING_EVENTS_DLQ = "booking-events.DLQ"

# name -> partitions; created idempotently by `ticketing topics`.
TOPICS: dict[str, int] = {
    BOOKING_EVENTS: 6,
    VOUCHER_RESERVED: 3,
    VOUCHER_RESERVED_DLQ: 1,
    BOOKING_EVENTS_DLQ: 1,
}


def dlq_of(topic: str) -> str:
    return f"{topic}.DLQ"
