"""Flash mode on real Redis, Kafka and Postgres: the gate decides, the consumer writes Postgres."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace

import asyncpg
import pytest
from ticketing.events import VoucherReserved, outgoing
from ticketing_testing import eventually
from voucher_service.adapters.publisher import KafkaPublisher
from voucher_service.adapters.repository import PgVouchersUnitOfWork
from voucher_service.adapters.reservations import PgNormalReservations
from voucher_service.domain.commands import ConfirmReservation, ReleaseReservation, ReserveVoucher
from voucher_service.service_layer.handlers import (
    confirm_reservation,
    release_reservation,
    reserve_voucher,
)
from voucher_service.service_layer.ports import Deps
from voucher_testkit import (
    assert_invariant,
    dead_letters,
    invariant,
    new_voucher,
    try_reserve,
    unique_customer,
    watched_statements,
)

pytestmark = pytest.mark.integration


async def settled(pool: asyncpg.Pool, code: str, used: int) -> None:
    async def check() -> bool:
        return (await invariant(pool, code))[0] == used
    await eventually(check, timeout=30)
    assert await assert_invariant(pool, code) == used


async def test_r3_flash_200_customers_on_limit_10(flash_deps: Deps, pool: asyncpg.Pool) -> None:
    code = await new_voucher(flash_deps, limit=10, flash=True)
    cmds = [ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000) for _ in range(200)]
    outcomes = await asyncio.gather(*(try_reserve(flash_deps, c) for c in cmds))
    assert outcomes.count("ok") == 10
    assert set(outcomes) == {"ok", "OutOfStock"}
    await settled(pool, code, 10)


@pytest.mark.parametrize("limit", [1, 100])
async def test_r3_flash_at_limit_minus_one_500_at_once(flash_deps: Deps, pool: asyncpg.Pool,
                                                       limit: int) -> None:
    code = await new_voucher(flash_deps, limit=limit, flash=True)
    first = [ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000) for _ in range(limit - 1)]
    assert all(o == "ok" for o in await asyncio.gather(*(try_reserve(flash_deps, c) for c in first)))
    cmds = [ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000) for _ in range(500)]
    outcomes = await asyncio.gather(*(try_reserve(flash_deps, c) for c in cmds))
    assert outcomes.count("ok") == 1
    await settled(pool, code, limit)


async def test_a_flash_reservation_makes_no_postgres_statement_on_its_path(
        flash_deps: Deps, pool: asyncpg.Pool, voucher_dsn: str) -> None:
    """Redis decides, Kafka carries, the writer persists: once the voucher's terms are cached, reservations
    (new, retried and refused at the sell-out) run no statement on the API's connections; every use still
    reaches Postgres, through the writer."""
    code = await new_voucher(flash_deps, limit=40, flash=True)
    async with watched_statements(voucher_dsn, size=2) as (watched, statements):
        api = replace(flash_deps, uow=lambda: PgVouchersUnitOfWork(watched),
                      reservations=PgNormalReservations(watched))
        first = ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000)
        assert await try_reserve(api, first) == "ok"  # reads the terms (cached from here on)
        statements.clear()
        cmds = [ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000) for _ in range(60)]
        outcomes = await asyncio.gather(*(try_reserve(api, c) for c in [*cmds, first]))
        assert outcomes.count("ok") == 40 and outcomes[-1] == "ok"  # 39 new ones, and the retry
        assert await try_reserve(api, cmds[0]) in ("ok", "OutOfStock")  # after the sell-out: the cache
        assert statements == []
    await settled(pool, code, 40)


async def test_flash_retries_and_per_user_limit(flash_deps: Deps, pool: asyncpg.Pool) -> None:
    code = await new_voucher(flash_deps, limit=50, per_user=2, flash=True)
    customer = unique_customer()
    retry = ReserveVoucher(code, customer, str(uuid.uuid4()), 1000)
    assert await asyncio.gather(*(try_reserve(flash_deps, retry) for _ in range(10))) == ["ok"] * 10
    others = [ReserveVoucher(code, customer, str(uuid.uuid4()), 1000) for _ in range(10)]
    outcomes = await asyncio.gather(*(try_reserve(flash_deps, c) for c in others))
    assert outcomes.count("ok") == 1 and outcomes.count("AlreadyUsed") == 9
    await settled(pool, code, 2)


async def test_flash_release_before_consumer_leaves_a_tombstone(flash_deps: Deps, pool: asyncpg.Pool,
                                                                publisher: KafkaPublisher) -> None:
    code = await new_voucher(flash_deps, limit=3, flash=True)
    customer, order = unique_customer(), str(uuid.uuid4())
    assert flash_deps.gate is not None
    await flash_deps.gate.reserve(code, customer, 1, order, 1000)  # the gate only: the message is "late"
    assert await release_reservation(ReleaseReservation(order, code), flash_deps)
    assert await release_reservation(ReleaseReservation(order, code), flash_deps)
    await publisher.publish(VoucherReserved.new(code=code, customer_id=customer, order_id=order,
                                                order_amount=1000))
    probe = ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000)  # a later message to wait on
    await reserve_voucher(probe, flash_deps)
    await settled(pool, code, 1)
    status = await pool.fetchval("SELECT status FROM voucher_redemption WHERE order_id = $1", order)
    assert status == "RELEASED"
    assert await flash_deps.gate.remaining(code) == 2
    assert await confirm_reservation(ConfirmReservation(probe.order_id, code), flash_deps)


async def test_redelivered_message_leaves_used_count(flash_deps: Deps, pool: asyncpg.Pool,
                                                     publisher: KafkaPublisher) -> None:
    code = await new_voucher(flash_deps, limit=5, flash=True)
    cmd = ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000)
    await reserve_voucher(cmd, flash_deps)
    await settled(pool, code, 1)
    again = VoucherReserved.new(code=code, customer_id=cmd.customer_id, order_id=cmd.order_id,
                                order_amount=1000)
    for _ in range(3):  # a new event id each time (past the inbox) and the very same bytes twice
        await publisher.publish(again)
    await publisher.publish(VoucherReserved.new(code=code, customer_id=cmd.customer_id, order_id=cmd.order_id,
                                                order_amount=1000))
    probe = ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000)
    await reserve_voucher(probe, flash_deps)
    await settled(pool, code, 2)


async def test_poison_message_reaches_the_dlq(flash_deps: Deps, pool: asyncpg.Pool,
                                              publisher: KafkaPublisher, kafka_bootstrap: str) -> None:
    code = await new_voucher(flash_deps, limit=1, flash=True)
    await reserve_voucher(ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000), flash_deps)
    await settled(pool, code, 1)
    # The gate oversold (as after a Redis data loss): the database must refuse the extra use.
    excess = VoucherReserved.new(code=code, customer_id=unique_customer(), order_id=str(uuid.uuid4()),
                                 order_amount=1000)
    value = outgoing(excess).value
    found = await dead_letters(kafka_bootstrap, lambda: publisher.publish(excess), {value})
    assert value in found, "the excess reservation never reached the DLQ"
    headers = dict(found[value].headers)
    assert headers["dlq.original.topic"] == b"voucher-reserved" and b"ck_used" in headers["dlq.error"]
    await assert_invariant(pool, code)
    rows = await pool.fetchval("SELECT count(*) FROM voucher_redemption WHERE order_id = $1", excess.orderId)
    assert rows == 0


async def test_acknowledged_orders_are_marked_in_one_script_run(flash_deps: Deps, pool: asyncpg.Pool) -> None:
    """Acks of one Kafka batch resume their requests together: their P -> R marks share one EVALSHA,
    and every one of them is marked before its request goes on."""
    code = await new_voucher(flash_deps, limit=50, flash=True)
    gate = flash_deps.gate
    orders = [str(uuid.uuid4()) for _ in range(20)]
    for order in orders:
        assert (await gate.reserve(code, unique_customer(), 1, order, 1000)).name == "RESERVED"
    runs: list[int] = []
    script = gate._sent  # type: ignore[attr-defined]

    async def counted(*, keys: list[str], args: list[str]) -> object:
        runs.append(len(args))
        return await script(keys=keys, args=args)

    gate._sent = counted  # type: ignore[attr-defined]
    try:
        await asyncio.gather(*(gate.mark_sent(code, o) for o in orders))
    finally:
        gate._sent = script  # type: ignore[attr-defined]
    assert runs == [20]
    assert {(await gate.order(code, o)).state for o in orders} == {"R"}  # type: ignore[union-attr]
    await gate.mark_sent(code, orders[0])  # already R: a later mark changes nothing
    assert (await gate.order(code, orders[0])).state == "R"  # type: ignore[union-attr]


async def test_reservations_arriving_together_share_one_script_run(flash_deps: Deps, pool: asyncpg.Pool) -> None:
    """The gate takes the reservations of one voucher that arrive in the same loop turn in one Lua run,
    in order, with the answers separate runs would give: a limit of 3 and 6 requests (one of them a
    twin of another's order) give 3 RESERVED, 1 PENDING (the twin), 2 OUT_OF_STOCK."""
    code = await new_voucher(flash_deps, limit=3, flash=True)
    gate = flash_deps.gate
    assert (await gate.reserve(code, unique_customer(), 1, str(uuid.uuid4()), 1000)).name == "RESERVED"
    runs: list[int] = []
    script = gate._reserve  # type: ignore[attr-defined]

    async def counted(*, keys: list[str], args: list[object]) -> object:
        runs.append((len(args) - 1) // 4)
        return await script(keys=keys, args=args)

    twin_customer, twin_order = unique_customer(), str(uuid.uuid4())
    requests = [(unique_customer(), str(uuid.uuid4())), (twin_customer, twin_order), (twin_customer, twin_order),
                (unique_customer(), str(uuid.uuid4())), (unique_customer(), str(uuid.uuid4()))]
    gate._reserve = counted  # type: ignore[attr-defined]
    try:
        answers = await asyncio.gather(*(gate.reserve(code, c, 1, o, 1000) for c, o in requests))
    finally:
        gate._reserve = script  # type: ignore[attr-defined]
    assert runs == [5]
    assert [a.name for a in answers] == ["RESERVED", "RESERVED", "PENDING", "OUT_OF_STOCK", "OUT_OF_STOCK"]


async def test_reservations_arriving_while_a_run_is_out_wait_for_the_next_one(flash_deps: Deps) -> None:
    """One script run per voucher at a time: requests that come one per loop turn while a run is out at Redis
    do not each start a run of their own (a Redis call per turn under load); they go together in the next."""
    code = await new_voucher(flash_deps, limit=100, flash=True)
    gate = flash_deps.gate
    runs: list[int] = []
    script = gate._reserve  # type: ignore[attr-defined]
    release = asyncio.Event()

    async def slow(*, keys: list[str], args: list[object]) -> object:
        runs.append((len(args) - 1) // 4)
        await release.wait()  # the first run stays out while the others arrive
        return await script(keys=keys, args=args)

    gate._reserve = slow  # type: ignore[attr-defined]
    try:
        tasks = [asyncio.create_task(gate.reserve(code, unique_customer(), 1, str(uuid.uuid4()), 1000))]
        for _ in range(10):
            await asyncio.sleep(0)  # the next loop turn
            tasks.append(asyncio.create_task(gate.reserve(code, unique_customer(), 1, str(uuid.uuid4()), 1000)))
        release.set()
        answers = await asyncio.gather(*tasks)
    finally:
        gate._reserve = script  # type: ignore[attr-defined]
    assert {a.name for a in answers} == {"RESERVED"}
    assert len(runs) == 2 and sum(runs) == 11


async def test_the_gate_tells_who_holds_an_order_and_where_a_customer_stands(flash_deps: Deps) -> None:
    """holds (the sold-out cache's check for retries) and standing (quotes) on the real scripts."""
    code = await new_voucher(flash_deps, limit=3, flash=True)
    gate = flash_deps.gate
    buyer, other = unique_customer(), unique_customer()
    pending, sent, released = (str(uuid.uuid4()) for _ in range(3))
    for order in (pending, sent, released):
        assert (await gate.reserve(code, buyer if order != released else other, 2, order, 1000)).name == "RESERVED"
    await gate.mark_sent(code, sent)
    await gate.release(code, released)
    assert [await gate.holds(code, o, buyer) for o in (pending, sent)] == [True, True]
    assert not await gate.holds(code, pending, other)  # another customer's order
    assert not await gate.holds(code, released, other) and not await gate.holds(code, str(uuid.uuid4()), buyer)
    assert await gate.standing(code, buyer) == (1, 2) and await gate.standing(code, other) == (1, 0)
    assert (await gate.reserve(code, buyer, 2, pending, 1000)).name == "PENDING"  # a retry: now S
    assert await gate.release(code, pending, forget=True) == 0  # a retry sent it again: never forgotten
    assert await gate.holds(code, pending, buyer) and await gate.remaining(code) == 1
    never_left = str(uuid.uuid4())
    assert (await gate.reserve(code, other, 2, never_left, 1000)).name == "RESERVED"
    assert await gate.release(code, never_left, forget=True) == 1  # P, never re-sent: forgotten
    assert await gate.order(code, never_left) is None and await gate.remaining(code) == 1
