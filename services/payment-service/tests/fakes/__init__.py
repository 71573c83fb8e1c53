"""In-memory fakes of payment-service's ports (service_layer/ports.py), one module per port, and `fake_deps`
(world.py).

The fakes keep rows (tables.py). The repositories answer as the named queries of sql/payments.sql and the CHECKs
of the migrations do (payments.py); the gateway keeps sessions as the simulator does (open, paid, failed,
expired by its clock; cancel; refunds idempotent on the payment id); the vouchers keep uses per orderId as
voucher-service does. The contract tests (tests/integration/test_contract_*.py) run each of them and the real
adapter on the same cases. Tests reach this package through the `fakes` fixture of conftest.py (`kit.fakes`
too, or `from payment_fakes import ...`).
"""

from .callbacks import FakeCallbackEventRepository
from .gateway import FakeGateway, Session
from .holds import FakeHoldDirectory
from .keys import FakeIdempotencyRepository
from .payments import FakePaymentRepository
from .tables import Row, payments_db
from .unit_of_work import FakePaymentsUnitOfWork
from .vouchers import FakeVouchers, Voucher
from .world import FakeWorld, fake_deps

__all__ = ["FakeCallbackEventRepository", "FakeGateway", "FakeHoldDirectory", "FakeIdempotencyRepository",
           "FakePaymentRepository", "FakePaymentsUnitOfWork", "FakeVouchers", "FakeWorld", "Row", "Session",
           "Voucher", "fake_deps", "payments_db"]
