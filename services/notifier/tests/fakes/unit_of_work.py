"""NotifierUnitOfWork: every unit of work on the same in-memory stores."""

from __future__ import annotations

from types import TracebackType
from typing import Self

from notifier.domain.messages import Contact
from notifier.service_layer.ports import (
    NotifierUnitOfWork,
)

from .bookings import FakeBookings
from .directory import FakeDirectory
from .email_admin import FakeEmailAdmin
from .ledger import FakeLedger
from .queue import FakeQueue


class FakeUnitOfWork(NotifierUnitOfWork):
    """Every unit of work on the same in-memory stores; `commits` counts the commits."""

    def __init__(self, contacts: dict[int, Contact] | None = None, queue: FakeQueue | None = None) -> None:
        self.customers: FakeDirectory = FakeDirectory(contacts)
        self.bookings: FakeBookings = FakeBookings()
        self.points: FakeLedger = FakeLedger()
        self.emails: FakeQueue = queue or FakeQueue()
        self.email_admin: FakeEmailAdmin = FakeEmailAdmin(self.emails)
        self.commits = 0

    async def __aenter__(self) -> Self:
        self.committed = False
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        return None

    async def commit(self) -> None:
        self.committed = True
        self.commits += 1
