"""The operator's command line against real Kafka and Postgres: dead letters sent back are applied once;
the outbox and inbox status."""

import asyncio
import time
import uuid

import pytest
from aiokafka import AIOKafkaProducer
from platform_support import make_message
from ticketing.cli import main
from ticketing.consumer import ConsumerConfig, IdempotentConsumer
from ticketing.db import create_pool
from ticketing.kafka import create_topics

pytestmark = pytest.mark.integration


async def applied(db) -> dict[int, int]:
    return {r["seq"]: r["n"] for r in await db.fetch("SELECT seq, count(*) AS n FROM test_effect GROUP BY seq")}


async def until(check, timeout: float = 30):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while (value := await check()) is not True and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert value is True, value


def cli(capsys, *argv: str) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    code = main(list(argv))
    return code, capsys.readouterr().out


async def test_a_dead_letter_sent_back_is_applied_once(db, topic, platform_dsn, kafka_bootstrap, monkeypatch,
                                                      capsys) -> None:
    """A handler fails on one event (a missing reference, say) until an operator fixes the cause: the event
    goes to the DLQ, the others flow. Then `dlq replay` sends it back and it is applied, once: a second
    `--all` sends nothing, a forced replay of the same offset is absorbed by the inbox."""
    from platform_worker import TestEvent, apply_effect

    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    await create_topics(kafka_bootstrap, {f"{topic}.DLQ": 1})
    broken = {1}

    async def handler(conn, event: TestEvent) -> None:  # type: ignore[no-untyped-def]
        if event.seq in broken:
            raise LookupError(f"no reference for {event.seq} yet")
        await apply_effect(conn, event)

    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, enable_idempotence=True)
    await producer.start()
    try:
        for seq in range(3):
            _, message = make_message(topic, f"k{seq}", seq)
            await producer.send_and_wait(topic, value=message.value, key=message.key.encode())
    finally:
        await producer.stop()
    pool = await create_pool(platform_dsn, min_size=1, max_size=2)
    config = ConsumerConfig(name=f"cli-{topic}", topics=[topic], bootstrap=kafka_bootstrap,
                            decode=TestEvent.model_validate_json, handlers={"TestEvent": handler},
                            max_attempts=2, backoff_initial=0.05)
    stop = asyncio.Event()
    task = asyncio.create_task(IdempotentConsumer(config, pool).run(stop))
    try:
        await until(lambda: _eq(applied(db), {0: 1, 2: 1}))
        code, out = await asyncio.to_thread(cli, capsys, "dlq", "list", "--topic", topic)
        assert code == 0 and "1 dead letter(s)" in out and "LookupError" in out, out
        code, out = await asyncio.to_thread(cli, capsys, "dlq", "replay", "--topic", topic, "--all", "--dry-run")
        assert "1 dead letter(s) to send back" in out
        await asyncio.sleep(1)
        assert await applied(db) == {0: 1, 2: 1}  # a dry run sends nothing
        broken.clear()  # the operator fixed the cause
        code, out = await asyncio.to_thread(cli, capsys, "dlq", "replay", "--topic", topic, "--all")
        assert code == 0 and "1 dead letter(s) sent back" in out, out
        await until(lambda: _eq(applied(db), {0: 1, 1: 1, 2: 1}))
        code, out = await asyncio.to_thread(cli, capsys, "dlq", "replay", "--topic", topic, "--all")
        assert "0 dead letter(s) sent back" in out, out  # --all remembers what it sent
        code, out = await asyncio.to_thread(cli, capsys, "dlq", "replay", "--topic", topic, "--offset", "0")
        assert "1 dead letter(s) sent back" in out
        await asyncio.sleep(2)
        assert await applied(db) == {0: 1, 1: 1, 2: 1}  # the inbox absorbed the second copy
    finally:
        stop.set()
        await task
        await pool.close()


async def _eq(value, expected) -> bool:  # type: ignore[no-untyped-def]
    got = await value
    return True if got == expected else got


async def test_outbox_and_inbox_status(db, platform_dsn, monkeypatch, capsys) -> None:
    for service in ("HOLD", "PAYMENT", "VOUCHER", "NOTIFIER"):
        monkeypatch.setenv(f"{service}_DATABASE_URL", platform_dsn)  # the platform-test schema plays each
    await db.execute("INSERT INTO outbox (event_id, topic, message_key, payload, headers) "
                     "VALUES ($1, 't', 'k', '\\x7b7d'::bytea, '[]'::jsonb)", uuid.uuid4())
    await db.execute("INSERT INTO outbox (event_id, topic, message_key, payload, headers, pending) "
                     "VALUES ($1, 't', 'k', '\\x7b7d'::bytea, '[]'::jsonb, true)", uuid.uuid4())  # no version yet
    await db.execute("INSERT INTO processed_event (consumer, event_id) VALUES ('status-test', $1)", uuid.uuid4())
    code, out = await asyncio.to_thread(cli, capsys, "outbox", "status", "--service", "hold")
    assert code == 0 and "waiting      2" in out and "without their seat-map version      1" in out, out
    code, out = await asyncio.to_thread(cli, capsys, "inbox", "status", "--service", "hold")
    assert code == 0 and "status-test" in out and "processed        1" in out, out
    await db.execute("TRUNCATE outbox")  # a pending row would hold back a relay of this schema until the next TRUNCATE
