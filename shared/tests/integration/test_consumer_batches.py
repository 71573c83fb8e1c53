"""batch_transactions with batch handlers: one inbox statement per batch, a run of new events per call,
and a failure replayed record by record (poison to the DLQ, neighbours applied), against real Postgres."""

import uuid

import asyncpg
import orjson
import pytest
from aiokafka import AIOKafkaConsumer, ConsumerRecord
from platform_worker import TestEvent as WireEvent
from platform_worker import apply_effect
from ticketing import request_id
from ticketing.consumer import ConsumerConfig, IdempotentConsumer, PoisonMessage
from ticketing.db import create_pool
from ticketing.kafka import create_topics

pytestmark = pytest.mark.integration


def record(topic: str, offset: int, value: bytes, headers: tuple[tuple[str, bytes], ...] = ()) -> ConsumerRecord:
    return ConsumerRecord(topic, 0, offset, 0, 0, b"k", value, None, 0, len(value), headers)


def event(seq: int, event_type: str = "TestEvent", event_id: uuid.UUID | None = None) -> bytes:
    body = {"eventId": str(event_id or uuid.uuid4()), "type": event_type, "key": "k", "seq": seq}
    return orjson.dumps(body)


class Recorder:
    """Batch handler writing the effects in one statement; remembers each call's sequence numbers."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[list[int]] = []
        self.fail = fail

    async def __call__(self, conn: asyncpg.Connection, events: list[WireEvent]) -> None:
        self.calls.append([e.seq for e in events])
        if self.fail:
            raise RuntimeError("the batch handler broke")
        await conn.execute("INSERT INTO test_effect (event_id, message_key, seq) "
                           "SELECT unnest($1::uuid[]), 'k', unnest($2::int[])",
                           [e.eventId for e in events], [e.seq for e in events])


@pytest.fixture
async def pool(platform_dsn):
    p = await create_pool(platform_dsn, min_size=1, max_size=2)
    yield p
    await p.close()


async def one_by_one(conn: asyncpg.Connection, e: WireEvent) -> None:
    if e.seq == 99:
        raise PoisonMessage("seq 99 can never apply")
    await apply_effect(conn, e)


def consumer(pool, topic: str, batch: Recorder, bootstrap: str = "unused:9092", **handlers) -> IdempotentConsumer:
    return IdempotentConsumer(ConsumerConfig(
        name=f"batch-{topic}", topics=[topic], bootstrap=bootstrap, decode=WireEvent.model_validate_json,
        handlers={"TestEvent": one_by_one, **handlers}, batch_handlers={"TestEvent": batch},
        batch_transactions=True, backoff_initial=0.01), pool)


async def effects(db) -> list[int]:
    return [r["seq"] for r in await db.fetch("SELECT seq FROM test_effect ORDER BY seq")]


async def test_a_batch_handler_gets_each_new_event_once(db, pool, topic) -> None:
    batch, other = Recorder(), []

    async def other_handler(conn: asyncpg.Connection, e: WireEvent) -> None:
        other.append(e.seq)
    runner = consumer(pool, topic, batch, Other=other_handler)
    ids = [uuid.uuid4() for _ in range(5)]
    values = [event(0, event_id=ids[0]), event(1, event_id=ids[1]), event(0, event_id=ids[0]),
              event(10, "Other"), event(2, event_id=ids[2]), event(11, "Unhandled"), event(3, event_id=ids[3]),
              event(1, event_id=ids[1])]
    records = [record(topic, n, v) for n, v in enumerate(values)]
    await runner.process_batch(records)
    assert batch.calls == [[0, 1], [2, 3]]  # runs in offset order around the per-event type
    assert other == [10]
    await runner.process_batch(records)  # redelivered: everything is a duplicate now
    assert batch.calls == [[0, 1], [2, 3]] and other == [10]
    assert await effects(db) == [0, 1, 2, 3]
    assert await db.fetchval("SELECT count(*) FROM processed_event WHERE consumer = $1", f"batch-{topic}") == 5


async def test_a_failing_batch_is_replayed_record_by_record(db, pool, topic, kafka_bootstrap) -> None:
    await create_topics(kafka_bootstrap, {f"{topic}.DLQ": 1})
    batch = Recorder(fail=True)
    runner = consumer(pool, topic, batch, bootstrap=kafka_bootstrap)
    values = [event(0), event(99), b'{"eventId": "not-a-uuid", "type": "TestEvent"}', event(2)]
    await runner.open()
    try:
        await runner.process_batch([record(topic, n, v) for n, v in enumerate(values)])
    finally:
        await runner.close()
    assert batch.calls == []  # an undecodable record fails the batch before any handler runs
    assert await effects(db) == [0, 2]
    runner_ok = consumer(pool, topic, batch)
    await runner_ok.process_batch([record(topic, 9, event(3))])
    # The batch handler ran and failed (rolled back); the replay applied the event one by one.
    assert batch.calls == [[3]] and await effects(db) == [0, 2, 3]
    assert await dead_letters(kafka_bootstrap, f"{topic}.DLQ", 2) == [1, 2]


async def test_a_type_this_consumer_cannot_decode_nor_handles_is_skipped_not_dead_lettered(db, pool, topic) -> None:
    """A type added to the contract after the consumer was built (its decoder refuses it): skipped, alone or
    in a batch, like any type without a handler; the same shape of a type it handles is poison."""
    batch = Recorder()
    runner = consumer(pool, topic, batch)
    newer = orjson.dumps({"eventId": str(uuid.uuid4()), "type": "SomethingNew", "data": {"holdId": "h"}})
    assert await runner.inbox.apply(record(topic, 0, newer)) == "skipped"
    await runner.process_batch([record(topic, 1, event(0)), record(topic, 2, newer), record(topic, 3, event(1))])
    assert batch.calls == [[0, 1]] and await effects(db) == [0, 1]
    broken = orjson.dumps({"eventId": str(uuid.uuid4()), "type": "TestEvent", "data": {}})
    with pytest.raises(PoisonMessage):
        await runner.inbox.apply(record(topic, 4, broken))


async def test_a_type_named_in_the_headers_without_a_handler_is_skipped_undecoded(db, pool, topic) -> None:
    """The type header says the record is not for this consumer: skipped before decoding (even a value no
    decoder could read) and before any transaction; a record of a handled type, or without the header, is
    decoded as before."""
    batch = Recorder()
    runner = consumer(pool, topic, batch)
    decoded: list[bytes] = []
    decode = runner.inbox.decode
    runner.inbox.decode = lambda value: decoded.append(value) or decode(value)
    foreign = (("ce_type", b"SeatsHeld"),)
    garbage = b"\x00 not an event at all"
    assert await runner.inbox.apply(record(topic, 0, garbage, foreign)) == "skipped"
    await runner.process_batch([record(topic, 1, event(0), (("ce_type", b"TestEvent"),)),
                                record(topic, 2, garbage, foreign), record(topic, 3, event(1))])
    assert batch.calls == [[0, 1]] and await effects(db) == [0, 1]
    assert garbage not in decoded and len(decoded) == 2
    with pytest.raises(PoisonMessage):  # the same value under a handled type is read, and is poison
        await runner.inbox.apply(record(topic, 4, garbage, (("ce_type", b"TestEvent"),)))


async def test_each_event_of_a_batch_is_handled_under_its_own_request_id(db, pool, topic) -> None:
    """A per-event handler in a batch transaction runs with its record's x-request-id current, as alone: the
    events its effect writes name their own cause, not their neighbour's or none."""
    seen: list[tuple[int, str | None]] = []

    async def handler(conn: asyncpg.Connection, e: WireEvent) -> None:
        seen.append((e.seq, request_id.current()))
    runner = consumer(pool, topic, Recorder(), Other=handler)
    records = [record(topic, n, event(n, "Other"), ((request_id.HEADER, f"rid-{n}".encode()),) if n != 1 else ())
               for n in range(3)]
    await runner.process_batch(records)
    assert seen == [(0, "rid-0"), (1, None), (2, "rid-2")]
    assert request_id.current() is None


async def dead_letters(bootstrap: str, dlq: str, expected: int) -> list[int]:
    """Original offsets in the (fresh) DLQ topic: polled until `expected` came and one more poll is empty."""
    reader = AIOKafkaConsumer(dlq, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await reader.start()
    try:
        found: list[int] = []
        for _ in range(20):
            polled = [int(dict(r.headers)["dlq.original.offset"])
                      for records in (await reader.getmany(timeout_ms=500)).values() for r in records]
            if not polled and len(found) >= expected:
                break
            found += polled
        return sorted(found)
    finally:
        await reader.stop()


def test_a_batch_handler_needs_a_per_event_handler_for_the_replay() -> None:
    with pytest.raises(ValueError, match="per-event handler"):
        ConsumerConfig(name="x", topics=["t"], bootstrap="b", decode=WireEvent.model_validate_json,
                       handlers={}, batch_handlers={"TestEvent": Recorder()})
