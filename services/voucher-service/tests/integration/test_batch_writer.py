"""The voucher-reserved writer's batch path: one transaction per partition batch, still exactly-once."""

from __future__ import annotations

import uuid

import asyncpg
import pytest
from aiokafka import ConsumerRecord
from ticketing.events import VOUCHER_RESERVED, VoucherReserved, outgoing
from voucher_service.config import VoucherSettings
from voucher_service.entrypoints.consumer import voucher_reserved_consumer
from voucher_service.service_layer.context import Context
from voucher_testkit import TEST_PREFIX, assert_invariant, new_voucher, unique_customer

pytestmark = pytest.mark.integration


def _record(event: VoucherReserved, offset: int) -> ConsumerRecord:  # type: ignore[type-arg]
    value = outgoing(event).value
    return ConsumerRecord(VOUCHER_RESERVED, 0, offset, 0, 0, event.code.encode(), value, None, 0, len(value), ())


async def test_a_batch_applies_each_event_once(ctx: Context, pool: asyncpg.Pool, kafka_bootstrap: str) -> None:
    settings = VoucherSettings(kafka_bootstrap_servers=kafka_bootstrap,
                               kafka_group_prefix=f"{TEST_PREFIX}batch-{uuid.uuid4().hex[:6]}-")
    writer = voucher_reserved_consumer(settings, pool, ctx)
    assert writer.config.batch_transactions
    code = await new_voucher(ctx, limit=5, flash=True)
    events = [VoucherReserved.new(code=code, customer_id=unique_customer(), order_id=str(uuid.uuid4()),
                                  order_amount=1000) for _ in range(3)]
    batch = [_record(e, n) for n, e in enumerate([*events, events[0]])]  # the first one redelivered
    await writer.process_batch(batch)
    await writer.process_batch(batch)  # the whole batch again (a crash before the offset commit)
    assert await assert_invariant(pool, code) == 3
