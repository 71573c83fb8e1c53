"""In-memory fakes of voucher-service's ports (service_layer/ports.py, gate_ports.py), one module per port,
`fake_deps` (world.py), and payment-service's stand-in over real HTTP (payments_server.py).

The fakes hold what a test arranges and what the handlers sent. The flash gate restates the Lua scripts
(gate.py), and tests/integration/test_contract_gate.py runs it and the scripts on Redis on the same cases; the
payments fake and the HTTP adapter share tests/integration/test_payments_port.py. The normal mode's rules (the
limits, one use per order) live in SQL and are tested only against PostgreSQL (tests/integration): no fake
restates them. Tests import this package by the name conftest.py registers it under:
`from voucher_fakes import ...` (or the `fakes` fixture).
"""

from .gate import FakeGate
from .payments import FakePayments
from .payments_server import PaymentStub, payment_stub
from .publisher import FakePublisher
from .reservations import NoNormalReservations
from .world import NOW, VOUCHER, cmd, fake_deps

__all__ = ["NOW", "VOUCHER", "FakeGate", "FakePayments", "FakePublisher", "NoNormalReservations", "PaymentStub",
           "cmd", "fake_deps", "payment_stub"]
