"""In-memory fakes of the notifier's ports (service_layer/ports.py), one module per port: real subclasses, no
Mock; a unit of work's repositories share one store (unit_of_work.py).

Where a fake answers as sql/notifier.sql and the queue's unique keys do (the first confirmation and refund of a
booking stand, one cancellation and one credit per booking, one e-mail of a kind per event, one cancellation e-mail
per booking, only a FAILED e-mail re-queued), the contract test tests/integration/test_contract_repositories.py
runs it and the real adapter on the same cases. Tests import this package by the name conftest.py registers it
under: `from notifier_fakes import ...` (or the `fakes` fixture).
"""

from .bookings import FakeBookings
from .directory import FakeDirectory
from .email_admin import FakeEmailAdmin
from .ledger import FakeLedger
from .queue import FakeQueue, Row
from .unit_of_work import FakeUnitOfWork

__all__ = ["FakeBookings", "FakeDirectory", "FakeEmailAdmin", "FakeLedger", "FakeQueue", "FakeUnitOfWork", "Row"]
