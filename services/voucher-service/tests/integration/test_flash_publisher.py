"""The flash publisher against the real broker: a send that surely never left (SendRefused: the use may be
forgotten at once) is told apart from one whose outcome is unknown (it may land: the use stays held)."""

from __future__ import annotations

import uuid

import asyncpg
import pytest
from aiokafka import AIOKafkaProducer
from ticketing.events import VoucherReserved
from ticketing_testing import eventually
from voucher_service.adapters.publisher import KafkaPublisher
from voucher_service.domain.commands import ReserveVoucher
from voucher_service.domain.errors import SendRefused
from voucher_service.service_layer.flash_send import reserved_event
from voucher_service.service_layer.ports import Deps
from voucher_testkit import new_voucher, statuses, unique_customer

pytestmark = pytest.mark.integration


async def test_refused_and_unknown_sends(flash_deps: Deps, publisher: KafkaPublisher, pool: asyncpg.Pool,
                                         kafka_bootstrap: str) -> None:
    code = await new_voucher(flash_deps, limit=5, flash=True)

    def event() -> VoucherReserved:
        return reserved_event(ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000))
    with pytest.raises(SendRefused):  # not connected
        await KafkaPublisher(None, 5.0).publish(event())
    tiny = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, max_request_size=64)  # refused before queueing
    await tiny.start()
    try:
        with pytest.raises(SendRefused):
            await KafkaPublisher(tiny, 5.0).publish(event())
    finally:
        await tiny.stop()
    await publisher.publish(event())  # the topic's metadata is known from here on
    hasty, landing = KafkaPublisher(publisher.producer, 1e-6), event()
    with pytest.raises(TimeoutError):  # queued, no ack in time: not SendRefused
        await hasty.publish(landing)
    order = landing.orderId

    async def landed() -> bool:
        return await statuses(pool, [order]) == {order: "RESERVED"}
    await eventually(landed, timeout=30)  # it landed all the same: why the gate must keep such a use
