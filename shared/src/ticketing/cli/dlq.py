"""Dead letters (`<topic>.DLQ`, ticketing.dead_letter): list them, look at one, send them back.

A replay publishes the message again to its original topic with its original key, value and headers (the
`dlq.*` headers dropped, `dlq.replayed-from` added). Every consumer of that topic sees it once more and its
inbox drops it if it applied it before, so a replay applies the message at most once wherever it lands; fix
the cause first (the `dlq.error` header says what it was). `replay --all` remembers how far it got (the
consumer group `ticketing.dlq-replay`), so running it again sends only what was dead-lettered since.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.structs import OffsetAndMetadata

from ticketing.events import BOOKING_EVENTS, VOUCHER_RESERVED, dlq_of
from ticketing.kafka import client_options, idempotent_producer, topic_partitions
from ticketing.settings import ServiceSettings

REPLAY_GROUP = "ticketing.dlq-replay"
TOPIC_HELP = f"the original topic ({BOOKING_EVENTS}, {VOUCHER_RESERVED}); default {BOOKING_EVENTS}"


def headers_of(record: ConsumerRecord) -> dict[str, str]:
    return {k: v.decode(errors="replace") for k, v in (record.headers or ())}


def describe(record: ConsumerRecord) -> str:
    h = headers_of(record)
    try:
        value = json.loads(record.value)
        what = f"{value.get('type')} {value.get('eventId')}"
    except ValueError:
        what = f"{len(record.value)} undecodable bytes"
    return (f"{record.offset:>6}  {h.get('dlq.original.topic')}[{h.get('dlq.original.partition')}]@"
            f"{h.get('dlq.original.offset')}  {what}  by {h.get('dlq.consumer')}: {h.get('dlq.error', '')[:120]}")


async def read(bootstrap: str, dlq: str, group: str | None = None) -> list[ConsumerRecord]:
    """Every dead letter of `dlq` (after the group's committed offsets, when a group is given)."""
    parts = [TopicPartition(dlq, p) for p in await topic_partitions(bootstrap, dlq)]
    consumer = AIOKafkaConsumer(**client_options(bootstrap), group_id=group, enable_auto_commit=False,
                                auto_offset_reset="earliest")
    await consumer.start()
    try:
        consumer.assign(parts)
        ends = await consumer.end_offsets(parts)
        for tp in parts:
            committed = await consumer.committed(tp) if group else None
            consumer.seek(tp, committed or 0)
        records: list[ConsumerRecord] = []
        while any([await consumer.position(tp) < ends[tp] for tp in parts]):
            for batch in (await consumer.getmany(timeout_ms=1000)).values():
                records.extend(r for r in batch if r.offset < ends[TopicPartition(r.topic, r.partition)])
        return records
    finally:
        await consumer.stop()


async def send_back(bootstrap: str, records: list[ConsumerRecord]) -> None:
    producer = idempotent_producer(bootstrap, client_id="ticketing-dlq-replay")
    await producer.start()
    try:
        for record in records:
            h = headers_of(record)
            headers = [(k, v) for k, v in (record.headers or ()) if not k.startswith("dlq.")]
            headers.append(("dlq.replayed-from", f"{record.topic}:{record.partition}:{record.offset}".encode()))
            await producer.send_and_wait(h["dlq.original.topic"], value=record.value, key=record.key,
                                         headers=headers)
    finally:
        await producer.stop()


async def commit(bootstrap: str, records: list[ConsumerRecord]) -> None:
    """Remember, for `replay --all`, how far the dead letters were sent back (the replay group's offsets)."""
    last: dict[TopicPartition, int] = {}
    for r in records:
        tp = TopicPartition(r.topic, r.partition)
        last[tp] = max(r.offset + 1, last.get(tp, 0))
    consumer = AIOKafkaConsumer(**client_options(bootstrap), group_id=REPLAY_GROUP, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign(list(last))
        await consumer.commit({tp: OffsetAndMetadata(offset, "") for tp, offset in last.items()})
    finally:
        await consumer.stop()


def _bootstrap() -> str:
    return ServiceSettings().kafka_bootstrap_servers


def _list(args: argparse.Namespace) -> int:
    records = asyncio.run(read(_bootstrap(), dlq_of(args.topic)))
    for record in records:
        print(describe(record))
    print(f"{len(records)} dead letter(s) in {dlq_of(args.topic)}")
    return 0


def _show(args: argparse.Namespace) -> int:
    found = [r for r in asyncio.run(read(_bootstrap(), dlq_of(args.topic))) if r.offset == args.offset]
    if not found:
        print(f"no dead letter at offset {args.offset} of {dlq_of(args.topic)}")
        return 1
    record = found[0]
    print(json.dumps({"offset": record.offset, "key": (record.key or b"").decode(errors="replace"),
                      "headers": headers_of(record), "value": record.value.decode(errors="replace")}, indent=2))
    return 0


def _replay(args: argparse.Namespace) -> int:
    bootstrap, dlq = _bootstrap(), dlq_of(args.topic)
    records = asyncio.run(read(bootstrap, dlq, REPLAY_GROUP if args.all else None))
    if not args.all:
        records = [r for r in records if r.offset in set(args.offset)]
    if args.consumer:
        records = [r for r in records if headers_of(r).get("dlq.consumer") == args.consumer]
    for record in records:
        print(("would send back " if args.dry_run else "sending back ") + describe(record))
    if records and not args.dry_run:
        asyncio.run(send_back(bootstrap, records))
        if args.all:
            asyncio.run(commit(bootstrap, records))
    print(f"{len(records)} dead letter(s) {'to send back' if args.dry_run else 'sent back'} from {dlq}")
    return 0


def register(sub: Any) -> None:
    dlq = sub.add_parser("dlq", help="dead letters: list, show, send back").add_subparsers(dest="action",
                                                                                          required=True)
    listing = dlq.add_parser("list", help="every dead letter of a topic")
    listing.add_argument("--topic", default=BOOKING_EVENTS, help=TOPIC_HELP)
    listing.set_defaults(run=_list)
    show = dlq.add_parser("show", help="one dead letter: key, headers (where from, why) and value")
    show.add_argument("--topic", default=BOOKING_EVENTS, help=TOPIC_HELP)
    show.add_argument("--offset", type=int, required=True)
    show.set_defaults(run=_show)
    replay = dlq.add_parser("replay", help="send dead letters back to their topic (fix the cause first)")
    replay.add_argument("--topic", default=BOOKING_EVENTS, help=TOPIC_HELP)
    which = replay.add_mutually_exclusive_group(required=True)
    which.add_argument("--offset", type=int, action="append", help="a dead letter's offset (repeatable)")
    which.add_argument("--all", action="store_true", help="every dead letter not sent back by --all before")
    replay.add_argument("--consumer", help="only those this consumer group parked")
    replay.add_argument("--dry-run", action="store_true", help="list what would be sent back, send nothing")
    replay.set_defaults(run=_replay)
