"""The outbox and relay against real PostgreSQL and Kafka: only committed facts, in order, none lost."""

import asyncio
import uuid

import asyncpg
import pytest
from platform_support import make_message, read_topic, write_events
from prometheus_client import REGISTRY
from ticketing.outbox import QUERIES, append_message
from ticketing.relay import OutboxRelay, RelayConfig
from ticketing.relay.housekeeping import Housekeeping

pytestmark = pytest.mark.integration


def relay_for(dsn: str, bootstrap: str, **overrides) -> OutboxRelay:
    return OutboxRelay(RelayConfig(**{"service": "platform-test", "dsn": dsn, "bootstrap": bootstrap,
                                      "poll_interval": 0.2, **overrides}))


async def running(relay: OutboxRelay):
    stop = asyncio.Event()
    return stop, asyncio.create_task(relay.run(stop))


async def unpublished(conn) -> int:
    return await conn.fetchval("SELECT count(*) FROM outbox WHERE published_at IS NULL")


async def test_only_committed_rows_reach_kafka(db, topic, platform_dsn, kafka_bootstrap):
    committed_id, committed = make_message(topic, "k1", 0)
    rolled_back_id, rolled_back = make_message(topic, "k1", 1)
    async with db.transaction():
        await append_message(db, committed_id, committed)
    with pytest.raises(RuntimeError):
        async with db.transaction():
            await append_message(db, rolled_back_id, rolled_back)
            raise RuntimeError("the business transaction fails after writing its event")
    marker_id, marker = make_message(topic, "k1", 2)
    async with db.transaction():
        await append_message(db, marker_id, marker)

    stop, task = await running(relay_for(platform_dsn, kafka_bootstrap))
    records = await read_topic(kafka_bootstrap, topic, {committed_id, marker_id})
    stop.set()
    await task
    seen = [r[3] for r in records]
    assert seen == [committed_id, marker_id]
    assert rolled_back_id not in seen
    with pytest.raises(RuntimeError):
        await append_message(db, uuid.uuid4(), committed)  # no transaction: refused


async def test_per_key_order_holds_over_1000_events(db, topic, platform_dsn, kafka_bootstrap):
    keys = [f"booking-{i}" for i in range(40)]
    ids = await write_events(db, topic, keys, per_key=25)
    assert len(ids) == 1000
    stop, task = await running(relay_for(platform_dsn, kafka_bootstrap, batch_size=100))
    records = await read_topic(kafka_bootstrap, topic, set(ids), timeout=90)
    stop.set()
    await task
    assert {r[3] for r in records} == set(ids)
    by_key: dict[str, list[int]] = {}
    partition_of: dict[str, set[int]] = {}
    for partition, _offset, key, _id, seq in sorted(records, key=lambda r: (r[0], r[1])):
        by_key.setdefault(key, []).append(seq)
        partition_of.setdefault(key, set()).add(partition)
    assert all(len(p) == 1 for p in partition_of.values()), "a key must stay on one partition"
    for key, seqs in by_key.items():
        first_seen = list(dict.fromkeys(seqs))
        assert first_seen == sorted(first_seen) == list(range(25)), key
    assert await unpublished(db) == 0


async def test_a_row_committed_late_by_a_long_transaction_is_published(db, topic, platform_dsn, kafka_bootstrap):
    long_tx = await asyncpg.connect(platform_dsn)
    try:
        late_id, late = make_message(topic, "k-late", 0)
        tx = long_tx.transaction()
        await tx.start()
        await append_message(long_tx, late_id, late)  # takes a LOWER id than the rows below
        early_ids = await write_events(db, topic, ["k-early"], per_key=5)
        stop, task = await running(relay_for(platform_dsn, kafka_bootstrap))
        await read_topic(kafka_bootstrap, topic, set(early_ids))
        late_row = await db.fetchrow("SELECT id FROM outbox WHERE event_id = $1", late_id)
        assert late_row is None  # not committed yet, invisible to the relay
        await tx.commit()
        records = await read_topic(kafka_bootstrap, topic, {late_id, *early_ids})
        stop.set()
        await task
        assert late_id in {r[3] for r in records}
        first_early = await db.fetchval("SELECT min(id) FROM outbox WHERE event_id = ANY($1::uuid[])", early_ids)
        assert await db.fetchval("SELECT id FROM outbox WHERE event_id = $1", late_id) < first_early
    finally:
        await long_tx.close()


async def test_only_one_relay_leads_per_schema(db, topic, platform_dsn, kafka_bootstrap):
    first, second = relay_for(platform_dsn, kafka_bootstrap), relay_for(platform_dsn, kafka_bootstrap)
    stop1, task1 = await running(first)
    await asyncio.sleep(1.0)
    stop2, task2 = await running(second)
    ids = await write_events(db, topic, ["a", "b"], per_key=10)
    await read_topic(kafka_bootstrap, topic, set(ids))
    locks = await db.fetchval("""SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
                                 AND objid = hashtext('platform_test.outbox-relay')::oid
                                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())""")
    assert locks == 1
    stop1.set()
    await task1
    more = await write_events(db, topic, ["c"], per_key=3)  # the second relay takes over
    records = await read_topic(kafka_bootstrap, topic, set(more), timeout=30)
    stop2.set()
    await task2
    assert set(more) <= {r[3] for r in records}


async def test_a_backlog_goes_out_one_statement_a_batch_each_claim_marking_the_batch_before(
        db, topic, platform_dsn, kafka_bootstrap, monkeypatch):
    """While the broker answers a batch, the next is claimed by the statement that marks the one before it: no
    BEGIN, no COMMIT, no mark of its own for a batch of a backlog."""
    ids = []
    async with db.transaction():  # a backlog, as after an outage
        for seq in range(1000):
            event_id, message = make_message(topic, f"k{seq % 40}", seq)
            await append_message(db, event_id, message)
            ids.append(event_id)
    statements: list[tuple[str, tuple]] = []
    connect = asyncpg.connect

    async def logged(*args, **kwargs):
        conn = await connect(*args, **kwargs)
        conn.add_query_logger(lambda record: statements.append((record.query, record.args)))
        return conn

    monkeypatch.setattr(asyncpg, "connect", logged)
    stop, task = await running(relay_for(platform_dsn, kafka_bootstrap, batch_size=200, poll_interval=30))
    records = await read_topic(kafka_bootstrap, topic, set(ids), timeout=90)
    while await unpublished(db):
        await asyncio.sleep(0.1)
    stop.set()
    await task
    assert {r[3] for r in records} == set(ids)
    claims = [args for query, args in statements if query == QUERIES.claim_batch]
    # the 2nd batch claimed with the 1st in flight, after its last id; then each claim marks the batch before
    assert [len(marks) for _, _, marks in claims[:6]] == [0, 0, 200, 200, 200, 200]
    assert [after > 0 for _, after, _ in claims[:6]] == [False, True, True, True, True, True]
    others = [query for query, _ in statements if query.startswith("BEGIN") or query == QUERIES.mark_published]
    assert others == [QUERIES.mark_published]  # the last batch's, once the backlog was drained


async def test_a_row_waiting_for_its_seat_map_version_counts_in_the_relays_lag(db) -> None:
    """OutboxRelayStuck reads the leader's lag gauge: a pending row (hold-service's change not yet numbered) is
    unpublished, and the relay publishes nothing at or after it, so a numbering that fails shows as the lag of the
    oldest row waiting behind it, and the alert fires."""
    await db.execute("INSERT INTO outbox (event_id, topic, message_key, payload, headers, pending, created_at) "
                     "VALUES ($1, 't', 'k', '\\x7b7d'::bytea, '[]'::jsonb, true, now() - interval '2 minutes')",
                     uuid.uuid4())
    try:
        await Housekeeping("platform-test-numbering", refresh_seconds=1).run(db, idle=True)
        labels = {"service": "platform-test-numbering"}
        assert REGISTRY.get_sample_value("ticketing_outbox_oldest_unpublished_seconds", labels) >= 119
        assert REGISTRY.get_sample_value("ticketing_outbox_backlog_rows", labels) == 1
    finally:
        await db.execute("TRUNCATE outbox")
