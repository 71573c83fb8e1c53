"""Dead letters: a message that cannot be applied goes to `<topic>.DLQ`, with headers naming where it came
from (topic, partition, offset), the error and the consumer, so that it can be looked at and replayed."""

from __future__ import annotations

import logging

from aiokafka import AIOKafkaProducer, ConsumerRecord

from ticketing.events import dlq_of
from ticketing.kafka import idempotent_producer
from ticketing.logs import log_action

logger = logging.getLogger(__name__)


class DeadLetters:
    def __init__(self, bootstrap: str, consumer: str) -> None:
        self.bootstrap, self.consumer = bootstrap, consumer
        self._producer: AIOKafkaProducer | None = None  # made per start(): a stopped producer cannot restart

    async def start(self) -> None:
        self._producer = idempotent_producer(self.bootstrap, client_id=f"{self.consumer}-dlq")
        await self._producer.start()

    async def stop(self) -> None:
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None

    async def send(self, record: ConsumerRecord, error: BaseException) -> None:
        if self._producer is None:
            raise RuntimeError("dead-lettering needs a started producer")
        headers = [
            *(record.headers or []),
            ("dlq.original.topic", record.topic.encode()),
            ("dlq.original.partition", str(record.partition).encode()),
            ("dlq.original.offset", str(record.offset).encode()),
            ("dlq.error", f"{type(error).__name__}: {error}"[:1000].encode()),
            ("dlq.consumer", self.consumer.encode()),
        ]
        await self._producer.send_and_wait(dlq_of(record.topic), value=record.value, key=record.key,
                                           headers=headers)
        log_action(logger, "consumer.dead_lettered", str(error), level=logging.ERROR, consumer=self.consumer,
                   topic=record.topic, partition=record.partition, offset=record.offset)
