"""Kafka offsets as the checker needs them: end offsets, consumer group positions, and reading a topic.

A consumer group's lag is measured against end offsets taken at one moment (a target), not against the
moving end: other test runs publish to the same topics all the time, so "lag = 0" would rarely be seen,
while "every group has passed the offsets that existed when our outboxes were drained" is exact.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

Offsets = dict[TopicPartition, int]


class KafkaView:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self._admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        self._consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)

    async def __aenter__(self) -> KafkaView:
        await self._admin.start()
        await self._consumer.start()
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self._consumer.stop()
        await self._admin.close()

    async def partitions(self, topic: str) -> list[TopicPartition]:
        # Not consumer.partitions_for_topic: a consumer subscribed to nothing has no metadata, gives None,
        # and every lag computed from it would be a vacuous 0.
        (described,) = await self._admin.describe_topics([topic])
        parts = [TopicPartition(topic, p["partition"]) for p in described["partitions"]]
        if not parts:
            raise RuntimeError(f"topic {topic} has no partitions")
        return parts

    async def end_offsets(self, topic: str) -> Offsets:
        return dict(await self._consumer.end_offsets(await self.partitions(topic)))

    async def lag(self, group: str, target: Offsets) -> int:
        """How many messages before `target` the group has not committed yet."""
        done = await self._admin.list_consumer_group_offsets(group)
        begin = await self._consumer.beginning_offsets(list(target))
        return sum(max(0, end - max(done[tp].offset if tp in done else 0, begin[tp]))
                   for tp, end in target.items())

    async def lags(self, groups: dict[str, list[str]], targets: dict[str, Offsets] | None = None) -> dict[str, int]:
        """group -> lag behind `targets` (default: the end offsets now) of the topic it reads."""
        out: dict[str, int] = {}
        for topic, names in groups.items():
            target = (targets or {}).get(topic) or await self.end_offsets(topic)
            for group in names:
                out[group] = await self.lag(group, target)
        return out

    async def joined(self, group: str) -> bool:
        """The group has members and finished its rebalance (its consumers are reading)."""
        for response in await self._admin.describe_consumer_groups([group]):
            for g in response.to_object()["groups"]:
                if g["group"] == group:
                    return bool(g["state"] == "Stable" and g["members"])
        return False

    async def wait_caught_up(self, groups: dict[str, list[str]], *, timeout: float, slack: int = 0) -> None:
        deadline = time.monotonic() + timeout
        lags: dict[str, int] = {}
        waiting: list[str] = []
        while time.monotonic() < deadline:
            try:
                lags = await self.lags(groups)
                waiting = [g for names in groups.values() for g in names if not await self.joined(g)]
            except KafkaError as exc:  # the shared broker restarting: ask again until the deadline
                waiting = [repr(exc)]
            if max(lags.values(), default=0) <= slack and not waiting:
                return
            await asyncio.sleep(1)
        raise TimeoutError(f"consumers did not catch up within {timeout}s: lags {lags}, not joined {waiting}")

    async def read(self, topic: str, start: Offsets | None = None,
                   end: Offsets | None = None) -> AsyncIterator[tuple[Any, dict[str, Any]]]:
        """Every record of `topic` from `start` (default: the beginning) to `end` (default: now), decoded
        as JSON; yields (record, value). Values that are not JSON objects are yielded as {"_raw": bytes}."""
        end = end or await self.end_offsets(topic)
        reader = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False,
                                  isolation_level="read_committed", max_poll_records=2000)
        await reader.start()
        try:
            parts = list(end)
            reader.assign(parts)
            begin = await reader.beginning_offsets(parts)
            todo = {}
            for tp in parts:
                first = max(begin[tp], (start or {}).get(tp, 0))
                if first < end[tp]:
                    reader.seek(tp, first)
                    todo[tp] = end[tp]
            deadline = time.monotonic() + 120
            while todo and time.monotonic() < deadline:
                batches = await reader.getmany(*todo, timeout_ms=1000)
                for tp, records in batches.items():
                    for record in records:
                        if record.offset < todo.get(tp, -1):
                            yield record, _decode(record.value)
                for tp in list(todo):  # control records (transaction markers) advance positions silently
                    if await reader.position(tp) >= todo[tp]:
                        del todo[tp]
            if todo:
                raise TimeoutError(f"{topic}: could not read up to {todo}")
        finally:
            await reader.stop()


def _decode(value: bytes | None) -> dict[str, Any]:
    try:
        decoded = orjson.loads(value or b"")
    except orjson.JSONDecodeError:
        return {"_raw": value}
    return decoded if isinstance(decoded, dict) else {"_raw": value}
