"""`ticketing booking <bookingId>`: one booking's story across the four schemas and booking-events.

Each service's rows are read with that service's role; the topic is read on the booking's partition only
(booking-events is keyed by bookingId), from a little before the hold was taken.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.partitioner import DefaultPartitioner

from ticketing.db import Queries
from ticketing.events import BOOKING_EVENTS
from ticketing.kafka import client_options, topic_partitions
from ticketing.settings import OperatorSettings, ServiceSettings

Q = Queries.load(Path(__file__).resolve().parents[1] / "sql" / "story.sql")
Line = tuple[datetime, str, str]  # when, where, what


async def _rows(service: str, booking_id: uuid.UUID) -> tuple[list[Line], list[str]]:
    conn = await asyncpg.connect(OperatorSettings().database_url(service), timeout=5)
    try:
        lines: list[Line] = [(r["at"], f"{service} outbox", f"{r['type']} {r['state']}")
                             for r in await conn.fetch(Q.outbox_story, str(booking_id))]
        payments: list[str] = []
        if service == "hold":
            found = await conn.fetch(Q.hold_story, booking_id)
        elif service == "payment":
            found = await conn.fetch(Q.payment_story, booking_id)
            payments = [r["payment_id"] for r in found]
        elif service == "notifier":
            found = await conn.fetch(Q.notifier_story, booking_id)
        else:
            found = []
        return lines + [(r["at"], service, r["what"]) for r in found], payments
    finally:
        await conn.close()


async def _vouchers(payments: list[str]) -> list[Line]:
    conn = await asyncpg.connect(OperatorSettings().database_url("voucher"), timeout=5)
    try:
        return [(r["at"], "voucher", r["what"]) for r in await conn.fetch(Q.voucher_story, payments)]
    finally:
        await conn.close()


async def _topic(bootstrap: str, booking_id: uuid.UUID, since: datetime) -> list[Line]:
    partitions = await topic_partitions(bootstrap, BOOKING_EVENTS)
    consumer = AIOKafkaConsumer(**client_options(bootstrap), enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(BOOKING_EVENTS, DefaultPartitioner()(str(booking_id).encode(), partitions, partitions))
        consumer.assign([tp])
        start = (await consumer.offsets_for_times({tp: int(since.timestamp() * 1000)}))[tp]
        end = (await consumer.end_offsets([tp]))[tp]
        consumer.seek(tp, start.offset if start is not None else end)
        lines: list[Line] = []
        while await consumer.position(tp) < end:
            for record in (await consumer.getmany(tp, timeout_ms=1000)).get(tp, []):
                if record.key == str(booking_id).encode():
                    event: dict[str, Any] = json.loads(record.value)
                    lines.append((datetime.fromisoformat(event["occurredAt"]), f"topic@{record.offset}",
                                  f"{event['type']} from {event['source']} {json.dumps(event['data'])}"))
        return lines
    finally:
        await consumer.stop()


async def story(booking_id: uuid.UUID) -> list[Line]:
    found = await asyncio.gather(*(_rows(s, booking_id) for s in ("hold", "payment", "voucher", "notifier")))
    lines = [line for rows, _ in found for line in rows]
    payments = [p for _, ps in found for p in ps]
    lines += await _vouchers(payments) if payments else []
    since = min((at for at, _, _ in lines), default=datetime.now().astimezone()) - timedelta(minutes=1)
    lines += await _topic(ServiceSettings().kafka_bootstrap_servers, booking_id, since)
    return sorted(lines, key=lambda line: line[0])


def _booking(args: argparse.Namespace) -> int:
    lines = asyncio.run(story(args.booking_id))
    for at, where, what in lines:
        print(f"{at.isoformat(timespec='milliseconds'):32} {where:18} {what}")
    if not lines:
        print(f"nothing is known of booking {args.booking_id}")
    return 0 if lines else 1


def register(sub: Any) -> None:
    booking = sub.add_parser("booking", help="one booking's story across the services and the topic")
    booking.add_argument("booking_id", type=uuid.UUID)
    booking.set_defaults(run=_booking)
