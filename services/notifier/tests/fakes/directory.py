"""CustomerDirectory: the customers' contacts and the bookings met without an address, in memory."""

from __future__ import annotations

import uuid

from notifier.domain.messages import Contact
from notifier.service_layer.ports import (
    CustomerDirectory,
    WithoutAddress,
)


class FakeDirectory(CustomerDirectory):
    def __init__(self, contacts: dict[int, Contact] | None = None) -> None:
        self.contacts = dict(contacts or {})
        self.missing: dict[uuid.UUID, tuple[uuid.UUID, int, str]] = {}

    async def get(self, customer_id: int) -> Contact | None:
        return self.contacts.get(customer_id)

    async def upsert(self, contact: Contact) -> None:
        self.contacts[contact.customer_id] = contact

    async def all(self) -> list[Contact]:
        return [self.contacts[k] for k in sorted(self.contacts)]

    async def record_without_address(self, event_id: uuid.UUID, booking_id: uuid.UUID, customer_id: int,
                                     event_type: str) -> bool:
        first = event_id not in self.missing
        self.missing[event_id] = (booking_id, customer_id, event_type)
        return first

    async def without_address(self, limit: int) -> list[WithoutAddress]:
        return [WithoutAddress(e, b, c, t, None, None) for e, (b, c, t) in list(self.missing.items())[:limit]]
