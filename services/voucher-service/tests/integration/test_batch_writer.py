"""The voucher-reserved writer's batch path: one transaction per partition batch, still exactly-once."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import pytest
from aiokafka import ConsumerRecord
from ticketing.events import VOUCHER_RESERVED, VoucherReserved, outgoing
from voucher_service.adapters.repository import QUERIES
from voucher_service.config import VoucherSettings
from voucher_service.domain import commands
from voucher_service.entrypoints.consumer import joined, voucher_reserved_consumer
from voucher_service.service_layer import outcomes, reactions
from voucher_service.service_layer.flash_writer import write_reserved_batch
from voucher_service.service_layer.ports import Deps
from voucher_testkit import (
    TEST_PREFIX,
    assert_invariant,
    dead_letters,
    new_voucher,
    unique_code,
    unique_customer,
)

pytestmark = pytest.mark.integration


def _record(event: VoucherReserved, offset: int) -> ConsumerRecord:  # type: ignore[type-arg]
    value = outgoing(event).value
    return ConsumerRecord(VOUCHER_RESERVED, 0, offset, 0, 0, event.code.encode(), value, None, 0, len(value), ())


async def test_a_batch_applies_each_event_once(deps: Deps, pool: asyncpg.Pool, kafka_bootstrap: str) -> None:
    settings = VoucherSettings(kafka_bootstrap_servers=kafka_bootstrap,
                               kafka_group_prefix=f"{TEST_PREFIX}batch-{uuid.uuid4().hex[:6]}-")
    writer = voucher_reserved_consumer(settings, pool, deps)
    assert writer.config.batch_transactions
    code = await new_voucher(deps, limit=5, flash=True)
    events = [VoucherReserved.new(code=code, customer_id=unique_customer(), order_id=str(uuid.uuid4()),
                                  order_amount=1000) for _ in range(3)]
    batch = [_record(e, n) for n, e in enumerate([*events, events[0]])]  # the first one redelivered
    await writer.process_batch(batch)
    await writer.process_batch(batch)  # the whole batch again (a crash before the offset commit)
    assert await assert_invariant(pool, code) == 3


async def test_the_writer_asks_the_broker_for_batches_of_a_sale(deps: Deps, pool: asyncpg.Pool,
                                                               kafka_bootstrap: str) -> None:
    """aiokafka's default fetch answers at the first byte: during a sale the writer then committed a
    transaction per handful of reservations. It waits for ~70 messages or 100 ms instead."""
    settings = VoucherSettings(kafka_bootstrap_servers=kafka_bootstrap, kafka_group_prefix=f"{TEST_PREFIX}fetch-")
    kafka_consumer = voucher_reserved_consumer(settings, pool, deps)._consumer()
    one_message = len(outgoing(_reservations("FETCH", 1)[0]).value)
    assert kafka_consumer._fetch_min_bytes >= 50 * one_message  # type: ignore[attr-defined]
    assert kafka_consumer._fetch_max_wait_ms <= 100  # type: ignore[attr-defined]


def _reservations(code: str, n: int) -> list[VoucherReserved]:
    return [VoucherReserved.new(code=code, customer_id=unique_customer(), order_id=str(uuid.uuid4()),
                                order_amount=1000) for _ in range(n)]


async def _apply_counted(pool: asyncpg.Pool, deps: Deps, events: list[VoucherReserved]) -> list[str]:
    """write_reserved_batch in one transaction (as the consumer runs it); the statements it sent."""
    sent: list[Any] = []
    async with pool.acquire() as conn:
        conn.add_query_logger(sent.append)
        try:
            async with conn.transaction():
                await write_reserved_batch(events, joined(deps, conn))
        finally:
            conn.remove_query_logger(sent.append)
    return [q.query for q in sent if q.query not in ("BEGIN;", "COMMIT;", "ROLLBACK;") and not _introspection(q.query)]


def _introspection(query: str) -> bool:
    """What asyncpg itself asks a connection that has not seen a statement's types yet (jit off, the types, jit
    back): not the writer's statements."""
    return "set_config('jit'" in query or "pg_catalog.pg_type" in query


async def test_a_batch_is_written_with_one_write_statement(deps: Deps, pool: asyncpg.Pool) -> None:
    code = await new_voucher(deps, limit=60, flash=True)
    events = _reservations(code, 50)
    assert len(await _apply_counted(pool, deps, events)) == 2  # the orders' turn, then one write
    assert await assert_invariant(pool, code) == 50
    rows = await pool.fetchval("SELECT count(*) FROM voucher_redemption WHERE voucher_code = $1 "
                               "AND status = 'RESERVED' AND slot = 0", code)
    assert rows == 50
    again = [VoucherReserved.new(code=e.code, customer_id=e.customerId, order_id=e.orderId, order_amount=1000)
             for e in events]  # new event ids: past the inbox, stopped by ON CONFLICT (order_id)
    assert len(await _apply_counted(pool, deps, again)) == 2
    assert await assert_invariant(pool, code) == 50


async def test_the_rare_cases_fall_back_to_one_by_one(deps: Deps, pool: asyncpg.Pool) -> None:
    """Parked outcomes, per_user_limit > 1, one customer twice, unknown codes: as write_reserved."""
    code, multi = await new_voucher(deps, limit=10, flash=True), await new_voucher(deps, limit=10, per_user=2,
                                                                                  flash=True)
    plain, confirmed, released = _reservations(code, 3)
    twice = unique_customer()
    repeat = [VoucherReserved.new(code=multi, customer_id=twice, order_id=str(uuid.uuid4()), order_amount=1)
              for _ in range(2)]
    unknown = _reservations(unique_code("NONE"), 1)
    await pool.execute(QUERIES.park_outcome, confirmed.orderId, "CONFIRMED")
    await pool.execute(QUERIES.park_outcome, released.orderId, "RELEASED")
    await _apply_counted(pool, deps, [plain, confirmed, *repeat, released, *unknown])
    status = dict(await pool.fetch("SELECT order_id, status FROM voucher_redemption WHERE order_id = ANY($1)",
                                   [e.orderId for e in (plain, confirmed, released, *repeat, *unknown)]))
    assert status == {plain.orderId: "RESERVED", confirmed.orderId: "CONFIRMED", released.orderId: "RELEASED",
                      repeat[0].orderId: "RESERVED", repeat[1].orderId: "RESERVED"}
    assert await assert_invariant(pool, code) == 2 and await assert_invariant(pool, multi) == 2
    assert await pool.fetchval("SELECT count(*) FROM voucher_order_outcome WHERE order_id = ANY($1)",
                               [confirmed.orderId, released.orderId]) == 0


async def test_only_the_culprits_of_a_batch_reach_the_dlq(deps: Deps, pool: asyncpg.Pool,
                                                          kafka_bootstrap: str) -> None:
    settings = VoucherSettings(kafka_bootstrap_servers=kafka_bootstrap,
                               kafka_group_prefix=f"{TEST_PREFIX}batch-{uuid.uuid4().hex[:6]}-")
    writer = voucher_reserved_consumer(settings, pool, deps)
    code = await new_voucher(deps, limit=3, flash=True)
    first, ok1, ok2, oversold = _reservations(code, 4)
    no_slot = VoucherReserved.new(code=code, customer_id=first.customerId, order_id=str(uuid.uuid4()),
                                  order_amount=1000)  # a second use of a per_user_limit = 1 voucher
    await writer.process_batch([_record(first, 0)])
    batch = [_record(e, n) for n, e in enumerate([ok1, no_slot, ok2, oversold], start=1)]
    culprits = {outgoing(no_slot).value, outgoing(oversold).value}
    await writer.open()
    try:
        found = await dead_letters(kafka_bootstrap, lambda: writer.process_batch(batch), culprits)
    finally:
        await writer.close()
    assert culprits <= set(found)
    assert not {outgoing(e).value for e in (first, ok1, ok2)} & set(found)
    assert await assert_invariant(pool, code) == 3
    written = await pool.fetchval("SELECT count(*) FROM voucher_redemption WHERE order_id = ANY($1)",
                                  [e.orderId for e in (first, ok1, ok2, no_slot, oversold)])
    assert written == 3


@pytest.mark.parametrize("outcome", ["RELEASED", "CANCELLED"])
async def test_an_outcome_that_comes_while_the_use_is_being_written_waits_for_it(
        deps: Deps, pool: asyncpg.Pool, outcome: str) -> None:
    """A payment that expired at once: its PaymentFailed (or its booking's cancellation) reached the consumer
    while the writer's batch with the use was not committed yet. It waits for the batch and releases the
    use; without the turn it found no use, parked its outcome where the writer no longer looked, and the use
    stayed RESERVED."""
    code = await new_voucher(deps, limit=5, flash=True)
    (event,) = _reservations(code, 1)
    async with pool.acquire() as writer, pool.acquire() as consumer:
        writing = writer.transaction()
        await writing.start()
        await write_reserved_batch([event], joined(deps, writer))

        async def settle() -> None:
            async with consumer.transaction():
                booking_deps = joined(deps, consumer)
                if outcome == "CANCELLED":
                    await outcomes.cancel_use(commands.CancelUse(event.orderId), booking_deps)
                else:
                    await reactions.settle_use(commands.SettleUse(event.orderId, outcome), booking_deps)

        settling = asyncio.create_task(settle())
        await asyncio.sleep(0.3)
        assert not settling.done()  # it waits for the writer's turn
        await writing.commit()
        await asyncio.wait_for(settling, 10)
    assert await pool.fetchval("SELECT status FROM voucher_redemption WHERE order_id = $1", event.orderId) == "RELEASED"
    assert await pool.fetchval("SELECT count(*) FROM voucher_order_outcome WHERE order_id = $1", event.orderId) == 0
    assert await assert_invariant(pool, code) == 0


async def test_a_batch_of_another_environment_s_reservations_is_one_log_line_per_voucher(
        deps: Deps, pool: asyncpg.Pool, caplog: pytest.LogCaptureFixture) -> None:
    """A shared topic can carry hundreds of thousands of reservations of vouchers this database has never seen:
    a line each once took a writer that joined late longer than 30 s to reach its own (a benchmark's sale)."""
    codes = {unique_code(), unique_code()}
    first, second = sorted(codes)
    foreign = [*_reservations(first, 40), *_reservations(second, 25)]
    with caplog.at_level("INFO", logger="voucher_service.service_layer.flash_writer"):
        await _apply_counted(pool, deps, foreign)
    # only this test's vouchers: a writer of the same process may be skipping a shared topic's others meanwhile
    skipped = [r for r in caplog.records if getattr(r, "code", None) in codes
               and (getattr(r, "action", None) == "voucher.reserved_skipped" or "unknown voucher" in r.getMessage())]
    assert len(skipped) == 2, [r.getMessage() for r in skipped]
