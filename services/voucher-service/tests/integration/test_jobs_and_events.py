"""booking-events consumer, reservation expiry on many instances, and the reconciliation job."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace

import asyncpg
import pytest
import redis.asyncio as aioredis
from prometheus_client import REGISTRY
from ticketing.events import VoucherReserved
from ticketing_testing import eventually
from voucher_fakes import FakePayments
from voucher_service.adapters.gate import keys
from voucher_service.adapters.publisher import KafkaPublisher
from voucher_service.domain.commands import ReserveVoucher
from voucher_service.service_layer.expiry import expire_reservations
from voucher_service.service_layer.handlers import reserve_voucher
from voucher_service.service_layer.jobs import DRIFT, reconcile, reconcile_all
from voucher_service.service_layer.ports import Deps
from voucher_testkit import (
    EXPIRY_TTL,
    age,
    assert_invariant,
    invariant,
    make_deps,
    new_voucher,
    publish_events,
    saga_event,
    statuses,
    unique_customer,
)

pytestmark = pytest.mark.integration


async def test_booking_events_confirm_and_release(deps: Deps, pool: asyncpg.Pool, kafka_bootstrap: str,
                                                  booking_consumer: None) -> None:
    code = await new_voucher(deps, limit=5)
    paid, failed = str(uuid.uuid4()), str(uuid.uuid4())  # payment ids: the voucher orderIds
    for order in (paid, failed):
        await reserve_voucher(ReserveVoucher(code, unique_customer(), order, 1000), deps)
    declined = saga_event("PaymentFailed", failed)
    unknown = saga_event("PaymentFailed", str(uuid.uuid4()))  # a payment without a voucher: parked, purged later
    # The release redelivered twice (the inbox absorbs it).
    await publish_events(kafka_bootstrap, [saga_event("BookingConfirmed", paid), declined, unknown, declined, declined])

    async def settled() -> bool:
        return await statuses(pool, [paid, failed]) == {paid: "CONFIRMED", failed: "RELEASED"}
    await eventually(settled, timeout=60)  # a first join of the group may wait for a rebalance
    assert await assert_invariant(pool, code) == 1


async def test_expiry_on_many_instances_releases_each_use_once(pool: asyncpg.Pool, redis: aioredis.Redis,
                                                               publisher: KafkaPublisher,
                                                               reserved_consumer: None) -> None:
    # Every payment unknown to payment-service (the checkouts died): each expired use may be released.
    instances = [make_deps(pool, redis, publisher, reservation_ttl_seconds=EXPIRY_TTL, payments=FakePayments())
                 for _ in range(4)]
    first = instances[0]
    normal = await new_voucher(first, limit=50)
    flash = await new_voucher(first, limit=10, flash=True)
    for code, n in ((normal, 30), (flash, 10)):
        await asyncio.gather(*(reserve_voucher(ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1), first)
                               for _ in range(n)))

    async def flash_written() -> bool:
        return (await invariant(pool, flash))[0] == 10
    await eventually(flash_written, timeout=30)
    await age(pool, [normal, flash])
    # 12 concurrent runs on 4 instances: one holds the expiry lock at a time, the others skip this round.
    released = sum(await asyncio.gather(*(expire_reservations(c, batch=7) for c in instances for _ in range(3))))
    while batch := await expire_reservations(first):
        released += batch
    assert released >= 40  # (uses other tests aged as old expire too)
    for code in (normal, flash):
        assert await assert_invariant(pool, code) == 0
    assert await first.gate.remaining(flash) == 10  # every flash use given back exactly once


async def test_reconcile_reports_drift_and_repairs(flash_deps: Deps, pool: asyncpg.Pool,
                                                   redis: aioredis.Redis) -> None:
    code = await new_voucher(flash_deps, limit=10, flash=True)
    orders = [str(uuid.uuid4()) for _ in range(5)]
    for order in orders:
        await reserve_voucher(ReserveVoucher(code, unique_customer(), order, 1000), flash_deps)

    async def written() -> bool:
        return (await invariant(pool, code))[0] == 5
    await eventually(written, timeout=30)
    assert await reconcile(code, flash_deps) == 0
    # The gate forgets a use Postgres holds (an ambiguous Kafka send that landed after all).
    remaining, _, orders_key = keys(code)
    await redis.hdel(orders_key, orders[0])  # type: ignore[misc]
    await redis.incr(remaining)
    assert await reconcile(code, flash_deps) == 1
    assert DRIFT.labels(code)._value.get() == 1
    assert await reconcile(code, flash_deps) == 0  # adopted: the gate counts it again
    assert await flash_deps.gate.remaining(code) == 5
    await redis.delete(remaining, orders_key)  # Redis lost the voucher: the job warms it up again once
    recovering = replace(flash_deps, recovery_fence_seconds=0.0)  # the writer caught up (no sends here)

    async def reloaded() -> bool:
        assert await reconcile(code, recovering) == 0
        return await flash_deps.gate.remaining(code) == 5
    await eventually(reloaded, timeout=20)
    assert 0 < await redis.ttl(remaining) <= 2 * 3600 + 86400  # the voucher's end plus a day


async def test_booking_outcome_before_the_reservation_lands(flash_deps: Deps, pool: asyncpg.Pool,
                                                            kafka_bootstrap: str, booking_consumer: None,
                                                            publisher: KafkaPublisher,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """Flash mode: BookingConfirmed / PaymentFailed overtake VoucherReserved (a lagging writer). The outcome is
    parked under the payment id; the first one parked stands, as on a written use."""
    code = await new_voucher(flash_deps, limit=5, flash=True)
    gate = flash_deps.gate
    paid, failed = str(uuid.uuid4()), str(uuid.uuid4())
    customers = {paid: unique_customer(), failed: unique_customer()}
    for order, customer in customers.items():  # reserved in the gate; the message is held back
        await gate.reserve(code, customer, 1, order, 1000)
    await publish_events(kafka_bootstrap, [
        saga_event("BookingConfirmed", paid), saga_event("PaymentFailed", failed, reason="EXPIRED"),
        saga_event("PaymentFailed", paid), saga_event("BookingConfirmed", failed)])  # stale: the first stands

    async def parked() -> bool:
        rows = await pool.fetch("SELECT order_id, outcome FROM voucher_order_outcome WHERE order_id = ANY($1)",
                                [paid, failed])
        logged = any(getattr(r, "action", None) == "voucher.confirm_after_release" for r in caplog.records)
        return {r["order_id"]: r["outcome"] for r in rows} == {paid: "CONFIRMED", failed: "RELEASED"} and logged
    await eventually(parked, timeout=60)
    for order, customer in customers.items():  # the late messages
        await publisher.publish(VoucherReserved.new(code=code, customer_id=customer, order_id=order,
                                                    order_amount=1000))

    async def applied() -> bool:
        return await statuses(pool, [paid, failed]) == {paid: "CONFIRMED", failed: "RELEASED"}
    await eventually(applied, timeout=30)
    assert await assert_invariant(pool, code) == 1
    assert await gate.remaining(code) == 4  # the failed order's use went back to the gate


async def test_a_voucher_that_ended_loses_its_drift_series(flash_deps: Deps, pool: asyncpg.Pool) -> None:
    """A series per flash voucher while it sells; once it has ended, the next run takes it off /metrics (a code
    per voucher would otherwise pile up for as long as the worker runs)."""
    code = await new_voucher(flash_deps, limit=3, flash=True)
    drift = {"code": code}
    assert code in await reconcile_all(flash_deps)
    assert REGISTRY.get_sample_value("ticketing_voucher_gate_drift", drift) == 0
    await pool.execute("UPDATE voucher SET ends_at = now() WHERE code = $1", code)
    assert code not in await reconcile_all(flash_deps)
    assert REGISTRY.get_sample_value("ticketing_voucher_gate_drift", drift) is None
