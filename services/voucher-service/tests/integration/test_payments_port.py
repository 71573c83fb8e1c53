"""The Payments port's contract, run against the fake and the HTTP adapter (a stand-in payment-service
over real HTTP), plus what only the HTTP adapter can meet: a closed port, a foreign 404, a refused token."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
import pytest_asyncio
from api_kit import SECRET
from ticketing_testing import free_port
from voucher_fakes import FakePayments, PaymentStub, payment_stub
from voucher_service.adapters.payments import HttpPayments
from voucher_service.domain.errors import PaymentsUnavailable
from voucher_service.service_layer.ports import Payments

pytestmark = pytest.mark.integration
STATUSES = ("PENDING", "SUCCEEDED", "FAILED", "EXPIRED", "REFUNDED")


@dataclass
class Subject:
    payments: Payments
    statuses: dict[str, str]
    stub: PaymentStub | FakePayments

    def go_down(self) -> None:
        self.stub.down = True


@pytest_asyncio.fixture(params=["fake", "http"])
async def subject(request: pytest.FixtureRequest) -> AsyncIterator[Subject]:
    if request.param == "fake":
        fake = FakePayments()
        yield Subject(fake, fake.statuses, fake)
        return
    async with payment_stub(SECRET) as stub:
        adapter = HttpPayments(stub.url, jwt_secret=SECRET, timeout=2.0)
        yield Subject(adapter, stub.statuses, stub)
        await adapter.close()


async def test_status_of_each_payment(subject: Subject) -> None:
    ids = {status: str(uuid.uuid4()) for status in STATUSES}
    subject.statuses.update({payment_id: status for status, payment_id in ids.items()})
    for status, payment_id in ids.items():
        assert await subject.payments.status(payment_id) == status
    assert await subject.payments.status(str(uuid.uuid4())) is None  # never recorded
    assert await subject.payments.status("not-a-payment-id") is None
    subject.go_down()
    with pytest.raises(PaymentsUnavailable):
        await subject.payments.status(ids["PENDING"])


async def test_http_adapter_never_reads_silence_as_unknown() -> None:
    """Only the contract's 404 means "never recorded"; anything else that is not an answer is unavailable
    (the expiry then releases nothing)."""
    payment_id = str(uuid.uuid4())
    closed = HttpPayments(f"http://127.0.0.1:{free_port()}", jwt_secret=SECRET, timeout=1.0)
    async with payment_stub(SECRET) as stub:
        foreign = HttpPayments(f"{stub.url}/elsewhere", jwt_secret=SECRET, timeout=1.0)  # a plain-text 404
        wrong_secret = HttpPayments(stub.url, jwt_secret="another-secret-" + "y" * 32, timeout=1.0)  # 401
        for adapter in (closed, foreign, wrong_secret):
            with pytest.raises(PaymentsUnavailable):
                await adapter.status(payment_id)
            await adapter.close()
        asked, adapter = len(stub.asked), HttpPayments(stub.url, jwt_secret=SECRET, timeout=1.0)
        assert await adapter.status("../admin") is None
        assert len(stub.asked) == asked  # not a payment id: nothing asked
        await adapter.close()
