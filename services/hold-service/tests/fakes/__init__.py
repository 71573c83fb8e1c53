"""In-memory fakes of hold-service's ports (service_layer/ports.py and its siblings), one module per port, and
`fake_deps` (world.py).

The fakes keep rows (tables.py) and answer as Postgres (sql/holds.sql, sql/schema.sql) and Redis (adapters/lua) do.
Where that takes a rule of the SQL (lazy expiry, a seat being free, the per-customer cap, the taking of seats, a
sale closing, a waiting room opening itself), the rule is restated once (rules.py, writer.py, rooms.py) and the
contract tests (tests/integration/test_contract_*.py) run it and the real adapter on the same cases. Tests reach
this package through the `fakes` fixture of conftest.py (or `from hold_fakes import ...`).
"""

from .admission import FakeAdmission
from .door import FakeDoorRepository
from .holds import FakeHoldRepository
from .keys import FakeIdempotencyRepository
from .room_queue import FakeRoomQueue
from .rooms import FakeRoomStore
from .seat_maps import FakeSeatMaps
from .tables import Key, Seat, Showtime, holds_db
from .unit_of_work import FakeHoldsUnitOfWork
from .world import FakeWorld, fake_deps
from .writer import FakeHoldWriter

__all__ = ["FakeAdmission", "FakeDoorRepository", "FakeHoldRepository", "FakeHoldWriter", "FakeHoldsUnitOfWork",
           "FakeIdempotencyRepository", "FakeRoomQueue", "FakeRoomStore", "FakeSeatMaps", "FakeWorld", "Key",
           "Seat", "Showtime", "fake_deps", "holds_db"]
