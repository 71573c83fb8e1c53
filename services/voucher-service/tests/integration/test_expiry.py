"""Issue 11 case 7: the reservation expiry never releases a use whose payment succeeded, whatever the event
lag. Real Postgres, Redis and Kafka; payment-service is a stand-in over real HTTP (tests/fakes/payments_server.py)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
import pytest_asyncio
import redis.asyncio as aioredis
from api_kit import SECRET
from ticketing_testing import eventually
from voucher_fakes import PaymentStub, payment_stub
from voucher_service.adapters.payments import HttpPayments
from voucher_service.adapters.publisher import KafkaPublisher
from voucher_service.domain.commands import ConfirmReservation, ReserveVoucher
from voucher_service.service_layer import jobs
from voucher_service.service_layer.expiry import expire_reservations
from voucher_service.service_layer.handlers import confirm_reservation, reserve_voucher
from voucher_service.service_layer.jobs import reconcile
from voucher_service.service_layer.ports import Deps
from voucher_testkit import (
    EXPIRY_TTL,
    age,
    assert_invariant,
    invariant,
    make_deps,
    new_voucher,
    statuses,
    unique_customer,
)

pytestmark = pytest.mark.integration


@pytest_asyncio.fixture
async def stub() -> AsyncIterator[PaymentStub]:
    async with payment_stub(SECRET) as running:
        yield running


@pytest_asyncio.fixture
async def expiry_deps(pool: asyncpg.Pool, redis: aioredis.Redis, publisher: KafkaPublisher, reserved_consumer: None,
                     stub: PaymentStub) -> AsyncIterator[Deps]:
    payments = HttpPayments(stub.url, jwt_secret=SECRET, timeout=2.0)
    yield make_deps(pool, redis, publisher, reservation_ttl_seconds=EXPIRY_TTL, payments=payments)
    await payments.close()


async def _reserve(deps: Deps, code: str, status: str | None, stub: PaymentStub) -> str:
    payment = str(uuid.uuid4())
    await reserve_voucher(ReserveVoucher(code, unique_customer(), payment, 1000), deps)
    if status is not None:
        stub.statuses[payment] = status
    return payment


async def _expire_all(deps: Deps) -> int:
    released = 0
    while batch := await expire_reservations(deps):
        released += batch
    return released


async def test_expiry_releases_only_uses_whose_payment_ended_unpaid(expiry_deps: Deps, pool: asyncpg.Pool,
                                                                     stub: PaymentStub) -> None:
    normal = await new_voucher(expiry_deps, limit=10)
    flash = await new_voucher(expiry_deps, limit=10, flash=True)
    payments: dict[str, tuple[str, str | None]] = {}  # payment -> (voucher, payment status)
    for code in (normal, flash):
        for status in ("SUCCEEDED", "PENDING", "FAILED", "EXPIRED", "REFUNDED", None):
            payments[await _reserve(expiry_deps, code, status, stub)] = (code, status)

    async def flash_written() -> bool:
        return (await invariant(pool, flash))[0] == 6
    await eventually(flash_written, timeout=30)
    await age(pool, [normal, flash])  # long past the TTL: BookingConfirmed is lagging that much
    stub.down = True
    assert await expire_reservations(expiry_deps) == 0  # payment-service cannot tell: nothing released
    assert set((await statuses(pool, list(payments))).values()) == {"RESERVED"}
    stub.down = False
    assert await _expire_all(expiry_deps) >= 8
    kept = {p for p, (_, status) in payments.items() if status in ("SUCCEEDED", "PENDING")}
    assert await statuses(pool, list(payments)) == {p: "RESERVED" if p in kept else "RELEASED" for p in payments}
    for code in (normal, flash):
        assert await assert_invariant(pool, code) == 2
    assert await expiry_deps.gate.remaining(flash) == 8  # the 4 released flash uses given back once
    asked = len(stub.asked)
    assert await expire_reservations(expiry_deps) == 0
    assert not set(stub.asked[asked:]) & kept  # kept uses wait their turn (RECHECK_SECONDS) before a new question
    paid = next(p for p, (code, status) in payments.items() if code == normal and status == "SUCCEEDED")
    assert await confirm_reservation(ConfirmReservation(paid, normal), expiry_deps)  # the late BookingConfirmed


async def test_kept_uses_never_starve_the_queue(expiry_deps: Deps, pool: asyncpg.Pool, stub: PaymentStub) -> None:
    """One run at a time takes the least recently asked: a use kept for an open payment goes behind the others."""
    code = await new_voucher(expiry_deps, limit=10)
    paid = [await _reserve(expiry_deps, code, "SUCCEEDED", stub) for _ in range(3)]
    dead = await _reserve(expiry_deps, code, None, stub)
    await age(pool, [code])
    await pool.execute("UPDATE voucher_redemption SET created_at = created_at + interval '1 hour' "
                       "WHERE order_id = $1", dead)  # the youngest of the four
    released = 0
    for _ in range(4):
        released += await expire_reservations(expiry_deps, batch=1)
    assert released == 1 and (await statuses(pool, [dead])) == {dead: "RELEASED"}
    assert [p for p in stub.asked if p in paid] == paid  # each kept use asked once, oldest first


async def test_reconcile_gives_back_a_redis_only_use_only_when_its_payment_ended(
        expiry_deps: Deps, pool: asyncpg.Pool, stub: PaymentStub, monkeypatch: pytest.MonkeyPatch) -> None:
    """Flash uses the gate holds and Postgres does not (their message never landed, or the writer lags that
    much): past TTL + grace the reconciliation gives one back only under the expiry's rule."""
    code = await new_voucher(expiry_deps, limit=5, flash=True)
    gate = expiry_deps.gate
    orders = {status: str(uuid.uuid4()) for status in ("SUCCEEDED", "PENDING", "FAILED", "unknown")}
    for status, order in orders.items():
        assert (await gate.reserve(code, unique_customer(), 1, order, 1000)).name == "RESERVED"
        await gate.mark_sent(code, order)  # acknowledged, never written (e.g. a writer far behind)
        if status != "unknown":
            stub.statuses[order] = status
    monkeypatch.setattr(jobs, "GRACE_SECONDS", 0)
    monkeypatch.setattr(expiry_deps, "reservation_ttl_seconds", 1.0)
    await asyncio.sleep(2.1)  # reserved_at has a resolution of one second
    stub.down = True
    await reconcile(code, expiry_deps)
    assert await gate.remaining(code) == 1  # payment-service cannot tell: nothing given back
    stub.down = False
    await reconcile(code, expiry_deps)
    ended = [orders["FAILED"], orders["unknown"]]
    assert await statuses(pool, list(orders.values())) == dict.fromkeys(ended, "RELEASED")  # tombstones
    assert await gate.remaining(code) == 3
    assert {(await gate.order(code, o)).state for o in ended} == {"X"}  # type: ignore[union-attr]
    assert {(await gate.order(code, orders[s])).state for s in ("SUCCEEDED", "PENDING")} == {"R"}  # type: ignore[union-attr]
