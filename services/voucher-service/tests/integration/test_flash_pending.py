"""Issue 11 case 6: in flash mode a VoucherReserved send whose ack never came may still land later. Over the
whole scenario the 201s never exceed totalLimit and Postgres never refuses a promised use. Real Redis, Kafka
and Postgres; only the acks are lost (the messages really go to Kafka, now or later)."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest
import redis.asyncio as aioredis
from ticketing.events import VoucherReserved
from ticketing_testing import eventually
from voucher_fakes import FakePayments
from voucher_service.adapters.publisher import KafkaPublisher
from voucher_service.adapters.writer_lag import KafkaWriterLag
from voucher_service.domain.commands import ReserveVoucher
from voucher_service.service_layer import jobs
from voucher_service.service_layer.jobs import reconcile
from voucher_testkit import assert_invariant, make_deps, new_voucher, statuses, try_reserve, unique_customer

pytestmark = pytest.mark.integration


class AckLost(KafkaPublisher):
    """The real publisher, except for the first send of chosen orders: the message reaches Kafka now
    (`landed`) or is held back to be sent later (`held`), and the caller never sees the ack."""

    def __init__(self, real: KafkaPublisher, *, landed: set[str], held: set[str]) -> None:
        super().__init__(real.producer, real.timeout)
        self.landed, self.held, self.late = landed, held, list[VoucherReserved]()

    async def publish(self, event: VoucherReserved) -> None:
        if event.orderId in self.landed:
            self.landed.discard(event.orderId)
            await super().publish(event)
            raise TimeoutError("the ack was lost")
        if event.orderId in self.held:
            self.held.discard(event.orderId)
            self.late.append(event)
            raise TimeoutError("no ack yet: the message is still on its way")
        await super().publish(event)


async def test_unknown_sends_never_oversell_nor_refuse_a_promised_use(
        pool: asyncpg.Pool, redis: aioredis.Redis, publisher: KafkaPublisher, reserved_consumer: None,
        writer_lag: KafkaWriterLag, monkeypatch: pytest.MonkeyPatch) -> None:
    landed, unretried, held = (str(uuid.uuid4()) for _ in range(3))
    lossy = AckLost(publisher, landed={landed, unretried}, held={held})
    deps = make_deps(pool, redis, lossy, writer_lag=writer_lag, reservation_ttl_seconds=1,
                   payments=FakePayments())  # the payments of these orders are unknown: their uses may go
    code = await new_voucher(deps, limit=4, flash=True)
    customers: dict[str, int] = {}
    promised: list[str] = []

    async def attempt(order: str) -> str:
        outcome = await try_reserve(deps, ReserveVoucher(code, customers.setdefault(order, unique_customer()),
                                                        order, 1000))
        if outcome == "ok":
            promised.append(order)
        return outcome

    for order in (landed, unretried, held):  # no ack: 503, the uses stay held
        assert await attempt(order) == "GateUnavailable"
    others = [str(uuid.uuid4()) for _ in range(4)]
    assert [await attempt(order) for order in others] == ["ok"] + ["OutOfStock"] * 3
    assert await attempt(landed) == "ok"  # the retry sends the same event again; the inbox absorbs the copy
    paid = [landed, unretried, others[0]]

    async def written() -> bool:
        return await statuses(pool, paid) == dict.fromkeys(paid, "RESERVED")
    await eventually(written, timeout=30)
    # Nobody retries the other two. Past the grace period the reconciliation marks the landed one sent and
    # tombstones the held one in Postgres before giving its use back.
    monkeypatch.setattr(jobs, "GRACE_SECONDS", 0)
    await asyncio.sleep(2.1)  # reserved_at has a resolution of one second
    assert await reconcile(code, deps) == 0
    gate = deps.gate
    assert (await gate.order(code, unretried)).state == "R"  # type: ignore[union-attr]
    assert await statuses(pool, [held]) == {held: "RELEASED"} and await gate.remaining(code) == 1
    await publisher.publish(lossy.late[0])  # the held message lands at last: it must not count
    last = str(uuid.uuid4())
    assert await attempt(last) == "ok"  # the use the held order gave back

    async def settled() -> bool:
        return await statuses(pool, [last]) == {last: "RESERVED"}  # behind the late message in its partition
    await eventually(settled, timeout=30)
    print(f"201s={len(promised)} limit=4 used_count={await assert_invariant(pool, code)}")
    assert len(promised) <= 4
    live = await statuses(pool, [*paid, last, held])
    assert live == {**dict.fromkeys([*paid, last], "RESERVED"), held: "RELEASED"}  # every promised use counted
    assert set(promised) <= set(live) and await assert_invariant(pool, code) == 4
