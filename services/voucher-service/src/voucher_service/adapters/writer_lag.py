"""Where the voucher-reserved consumer (the Postgres writer of flash mode) stands, per voucher.

Needed only after Redis lost a voucher's keys: the gate may be reloaded from Postgres only once every
VoucherReserved the old gate admitted has been written, i.e. once the writer group's committed offset
on the voucher's partition reaches the partition's end offset taken after the loss. Messages are keyed
by voucher code, so one partition holds all of a voucher's messages.
"""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.partitioner import DefaultPartitioner
from aiokafka.structs import TopicPartition
from ticketing.events import VOUCHER_RESERVED
from ticketing.kafka import client_options

from voucher_service.service_layer.ports import WriterLag


class KafkaWriterLag(WriterLag):
    def __init__(self, bootstrap: str, group: str, timeout: float = 3.0) -> None:
        self.bootstrap, self.group, self.timeout = bootstrap, group, timeout
        self._admin: AIOKafkaAdminClient | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._partitions: list[int] = []
        self._lock = asyncio.Lock()

    async def _connect(self) -> tuple[AIOKafkaAdminClient, AIOKafkaConsumer]:
        # Lazy and kept: the probe runs only during a recovery, and Kafka may be down at start-up.
        async with self._lock:
            if self._admin is None or self._consumer is None:
                admin = AIOKafkaAdminClient(**client_options(self.bootstrap),
                                            request_timeout_ms=int(self.timeout * 1000))
                consumer = AIOKafkaConsumer(**client_options(self.bootstrap), enable_auto_commit=False,
                                            request_timeout_ms=int(self.timeout * 1000) + 1000)
                try:
                    await asyncio.wait_for(admin.start(), self.timeout)
                    await asyncio.wait_for(consumer.start(), self.timeout)
                    described = await asyncio.wait_for(admin.describe_topics([VOUCHER_RESERVED]), self.timeout)
                except BaseException:
                    await admin.close()
                    await consumer.stop()
                    raise
                self._partitions = sorted(p["partition"] for t in described for p in t["partitions"])
                self._admin, self._consumer = admin, consumer
            return self._admin, self._consumer

    def _partition(self, code: str) -> TopicPartition:
        if not self._partitions:
            raise ConnectionError(f"topic {VOUCHER_RESERVED} has no known partitions")
        index = DefaultPartitioner()(code.encode(), self._partitions, self._partitions)
        return TopicPartition(VOUCHER_RESERVED, index)

    async def end_offset(self, code: str) -> int:
        _, consumer = await self._connect()
        tp = self._partition(code)
        ends = await asyncio.wait_for(consumer.end_offsets([tp]), self.timeout)
        return int(ends[tp])

    async def committed_offset(self, code: str) -> int:
        admin, _ = await self._connect()
        tp = self._partition(code)
        offsets = await asyncio.wait_for(
            admin.list_consumer_group_offsets(self.group, partitions=[tp]), self.timeout)
        found = offsets.get(tp)
        # No commit yet: the group will read the partition from its start (auto_offset_reset=earliest).
        return max(int(found.offset), 0) if found is not None else 0

    async def close(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()
        if self._admin is not None:
            await self._admin.close()
        self._admin = self._consumer = None
