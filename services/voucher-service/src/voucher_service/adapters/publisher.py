"""VoucherReserved straight to Kafka (the flash-mode exception to the outbox, DESIGN.md section 4)."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaProducer
from ticketing.events import VoucherReserved, outgoing

from voucher_service.service_layer.ports import Publisher


class KafkaPublisher(Publisher):
    def __init__(self, producer: AIOKafkaProducer, timeout: float) -> None:
        self.producer = producer
        self.timeout = timeout

    async def publish(self, event: VoucherReserved) -> None:
        message = outgoing(event)  # topic voucher-reserved, key = voucher code
        # Awaited ack (acks=all, idempotent producer). A timeout is ambiguous (the message may still
        # land); the caller gives the use back, and the consumer's ON CONFLICT plus the CHECK keep
        # Postgres right whichever way it went.
        await asyncio.wait_for(
            self.producer.send_and_wait(message.topic, value=message.value, key=message.key.encode(),
                                        headers=message.headers),
            self.timeout)
