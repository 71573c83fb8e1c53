"""BookingRecords: what the notifier keeps of a booking (sql/notifier.sql's `booking`), in memory."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from notifier.service_layer.ports import (
    BookingRecord,
    BookingRecords,
)


class FakeBookings(BookingRecords):
    """As the named queries of sql/notifier.sql keep `booking`: the first confirmation and refund stand, the first
    cancellation is the only one answered."""

    def __init__(self) -> None:
        self.records: dict[uuid.UUID, BookingRecord] = {}

    def _record(self, booking_id: uuid.UUID) -> BookingRecord:
        return self.records.get(booking_id, BookingRecord(confirmed=None, refund_cents=None))

    async def record_confirmed(self, booking_id: uuid.UUID, customer_id: int, data: dict[str, Any]) -> None:
        record = self._record(booking_id)
        self.records[booking_id] = replace(record, confirmed=record.confirmed or data)

    async def record_refund(self, booking_id: uuid.UUID, customer_id: int, amount_cents: int) -> bool:
        record = self._record(booking_id)
        self.records[booking_id] = replace(record, refund_cents=record.refund_cents or amount_cents)
        return record.cancelled_by is not None

    async def record_cancelled(self, booking_id: uuid.UUID, customer_id: int,
                               event_id: uuid.UUID) -> BookingRecord | None:
        record = self._record(booking_id)
        if record.cancelled_by is not None:
            return None
        self.records[booking_id] = replace(record, cancelled_by=event_id)
        return self.records[booking_id]

    async def get(self, booking_id: uuid.UUID) -> BookingRecord | None:
        return self.records.get(booking_id)
