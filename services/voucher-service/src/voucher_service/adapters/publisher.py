"""VoucherReserved straight to Kafka (the flash-mode exception to the outbox, docs/events).

Kafka may be down when the API starts: the API must still start (normal mode needs no Kafka), so the
producer connects in the background and `ready` stays False (flash reserves answer 503) until it does.
Once connected, aiokafka reconnects by itself after a broker outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from aiokafka import AIOKafkaProducer
from ticketing.events import VoucherReserved, outgoing
from ticketing.kafka import idempotent_producer
from ticketing.logs import log_action

from voucher_service.domain.errors import SendRefused
from voucher_service.service_layer.ports import Publisher

logger = logging.getLogger(__name__)
CONNECT_TIMEOUT_SECONDS = 5.0
FLASH_BATCH_BYTES = 512 * 1024  # ~1,100 VoucherReserved; under the broker's message.max.bytes (1 MiB)


def flash_producer(bootstrap: str, linger_ms: int) -> AIOKafkaProducer:
    # The shared idempotent producer (acks=all, the deployment's SASL/TLS). Every flash request awaits its ack,
    # so a linger is latency on the hot path: the batches form without it (FLASH_LINGER_MS). They may be big:
    # at aiokafka's 16 KiB a batch held 33 VoucherReserved, so the 34th request of a burst waited for a
    # second acknowledgement round (one produce request in flight per broker), docs/benchmarks.md.
    return idempotent_producer(bootstrap, client_id="voucher-service-flash", linger_ms=linger_ms,
                               max_batch_size=FLASH_BATCH_BYTES)


class KafkaPublisher(Publisher):
    def __init__(self, producer: AIOKafkaProducer | None, timeout: float,
                 factory: Callable[[], AIOKafkaProducer] | None = None, retry_seconds: float = 2.0) -> None:
        self.producer, self.timeout = producer, timeout
        self._factory, self._retry = factory, retry_seconds
        self._connecting: asyncio.Task[None] | None = None

    @property
    def ready(self) -> bool:
        return self.producer is not None

    async def start(self) -> None:
        """Connect once now; on failure keep trying in the background. Never raises."""
        if self.producer is None and not await self._try_connect():
            self._connecting = asyncio.create_task(self._connect_until_done())

    async def _try_connect(self) -> bool:
        assert self._factory is not None
        producer = self._factory()
        try:  # bounded: a black-holed broker must not hold the API's start-up
            await asyncio.wait_for(producer.start(), CONNECT_TIMEOUT_SECONDS)
        except Exception as exc:  # KafkaConnectionError and friends: not there yet
            await producer.stop()
            log_action(logger, "voucher.producer_connect_failed", str(exc), level=logging.WARNING)
            return False
        self.producer = producer
        log_action(logger, "voucher.producer_connected")
        return True

    async def _connect_until_done(self) -> None:
        while True:  # a plain retry loop: nothing else can signal that Kafka came back
            if await self._try_connect():
                return
            await asyncio.sleep(self._retry)

    async def stop(self) -> None:
        if self._connecting is not None:
            self._connecting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._connecting
        if self.producer is not None:
            await self.producer.stop()

    async def publish(self, event: VoucherReserved) -> None:
        """Return once the broker acknowledged. SendRefused when the message surely never left: not
        connected, or `send()` failed or timed out before it queued the message (aiokafka queues it as the
        last step of `send()`, after its last await, so a cancellation there means not queued). Any later
        failure (no ack in time, a broker error) leaves the outcome unknown: the message may still land."""
        if self.producer is None:
            raise SendRefused("Kafka is not connected")
        message = outgoing(event)  # topic voucher-reserved, key = voucher code
        delivery = None
        try:
            async with asyncio.timeout(self.timeout):
                delivery = await self.producer.send(message.topic, value=message.value, key=message.key.encode(),
                                                    headers=message.headers)
                await delivery  # acks=all, idempotent producer
        except Exception as exc:
            if delivery is None:
                raise SendRefused(f"Kafka refused the message: {type(exc).__name__}: {exc}") from exc
            raise
