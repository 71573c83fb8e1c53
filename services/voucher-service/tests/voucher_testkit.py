"""Helpers shared by voucher-service tests (imported by name: conftest puts this folder on sys.path)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import redis.asyncio as aioredis
import voucher_service
from aiokafka import AIOKafkaConsumer, ConsumerRecord
from ticketing.events import VOUCHER_RESERVED_DLQ, BookingConfirmedData, booking_event, outgoing
from ticketing.kafka import idempotent_producer
from ticketing_testing.workers import group_prefix
from voucher_service.adapters.gate import RedisFlashGate
from voucher_service.adapters.repository import PgVouchersUnitOfWork
from voucher_service.adapters.reservations import PgNormalReservations
from voucher_service.domain.commands import CreateVoucher, ReserveVoucher
from voucher_service.domain.errors import GateUnavailable, VoucherError
from voucher_service.service_layer.handlers import create_voucher, reserve_voucher
from voucher_service.service_layer.ports import Deps

MIGRATIONS = Path(voucher_service.__file__).resolve().parent / "sql" / "migrations"
TEST_PREFIX = group_prefix("vtest-")  # stable across runs, one per xdist worker
# Expiry tests age their uses past a TTL of 30 days: the shared test database's other reservations (other
# tests', the benchmark's tens of thousands) stay out of their runs.
EXPIRY_TTL = 30 * 86400.0


def unique_code(prefix: str = "T") -> str:
    return f"{prefix}{uuid.uuid4().hex[:12].upper()}"


def unique_customer() -> int:
    return uuid.uuid4().int % 10**12 + 10**6


def voucher_cmd(code: str, *, limit: int = 10, per_user: int = 1, flash: bool = False,
                min_amount: int = 0, starts_in: float = -3600, ends_in: float = 3600) -> CreateVoucher:
    now = datetime.now(UTC)
    return CreateVoucher(code, 500, min_amount, limit, per_user, now + timedelta(seconds=starts_in),
                         now + timedelta(seconds=ends_in), flash)


def make_deps(pool: asyncpg.Pool, redis: aioredis.Redis, publisher: Any = None, **kw: Any) -> Deps:
    return Deps(uow=lambda: PgVouchersUnitOfWork(pool), gate=RedisFlashGate(redis),
                reservations=PgNormalReservations(pool), publisher=publisher, **kw)


async def new_voucher(deps: Deps, **kw: Any) -> str:
    code = unique_code()
    await create_voucher(voucher_cmd(code, **kw), deps)
    return code


async def invariant(pool: asyncpg.Pool, code: str) -> tuple[int, int, int]:
    """(used_count, live redemptions, total_limit) straight from Postgres."""
    row = await pool.fetchrow(
        "SELECT v.used_count, v.total_limit, (SELECT count(*) FROM voucher_redemption r "
        "WHERE r.voucher_code = v.code AND r.status IN ('RESERVED','CONFIRMED')) AS live "
        "FROM voucher v WHERE v.code = $1", code)
    return int(row["used_count"]), int(row["live"]), int(row["total_limit"])


async def assert_invariant(pool: asyncpg.Pool, code: str) -> int:
    used, live, limit = await invariant(pool, code)
    assert used <= limit, f"oversell: used {used} > limit {limit}"
    assert used == live, f"used_count {used} != live redemptions {live}"
    return used


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, asyncio.CancelledError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


@contextlib.asynccontextmanager
async def forwarder(port: int, target: str) -> AsyncIterator[None]:
    """A TCP forwarder to the broker on `port`: \"Kafka comes back\" without touching the shared broker
    (the client bootstraps through it, then talks to the advertised broker address directly)."""
    host, target_port = target.split(",")[0].rsplit(":", 1)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(host, int(target_port))
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
    server = await asyncio.start_server(handle, "127.0.0.1", port)
    try:
        yield
    finally:
        server.close()


async def try_reserve(deps: Deps, cmd: ReserveVoucher) -> str:
    """"ok", or the name of the VoucherError the reservation raised."""
    try:
        await reserve_voucher(cmd, deps)
        return "ok"
    except VoucherError as exc:
        return type(exc).__name__


async def reserve_retrying(deps: Deps, code: str, *, retry_for: float = 0.0) -> tuple[str, str]:
    """One customer's reservation; a 503 is retried with the same order id (as the contract's Retry-After
    asks) for up to `retry_for` seconds. Returns (outcome, order id): "ok", "unavailable" or the error's name."""
    order, customer = str(uuid.uuid4()), unique_customer()
    deadline = time.monotonic() + retry_for
    while True:
        try:
            await reserve_voucher(ReserveVoucher(code, customer, order, 1000), deps)
            return "ok", order
        except GateUnavailable:
            if time.monotonic() >= deadline:
                return "unavailable", order
            await asyncio.sleep(0.3)
        except VoucherError as exc:
            return type(exc).__name__, order


async def used_once_quiet(pool: asyncpg.Pool, code: str, quiet: float = 3.0, timeout: float = 40.0) -> int:
    """used_count once the writer stopped changing it (the messages in flight have landed)."""
    last, since, deadline = -1, time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        used = (await invariant(pool, code))[0]
        if used != last:
            last, since = used, time.monotonic()
        elif time.monotonic() - since > quiet:
            return used
        await asyncio.sleep(0.2)
    return last


async def skip_backlog(kafka_bootstrap: str, group: str, topic: str) -> None:
    """Commit `group`'s offsets at the end of `topic`, so that a consumer of that group started next reads only
    what is published from now on."""
    reader = AIOKafkaConsumer(topic, bootstrap_servers=kafka_bootstrap, group_id=None)  # every partition, no group
    await reader.start()
    try:
        ends = await reader.end_offsets(sorted(reader.assignment()))
    finally:
        await reader.stop()
    committer = AIOKafkaConsumer(bootstrap_servers=kafka_bootstrap, group_id=group, enable_auto_commit=False)
    await committer.start()
    try:
        committer.assign(list(ends))
        await committer.commit(ends)
    finally:
        await committer.stop()


async def dead_letters(kafka_bootstrap: str, run: Callable[[], Awaitable[object]],
                       wanted: set[bytes]) -> dict[bytes, ConsumerRecord]:  # type: ignore[type-arg]
    """The voucher-reserved.DLQ records sent from the time `run` starts, by value: polled until every
    `wanted` value came (or 30 s), then once more so that an unexpected extra shows too."""
    dlq = AIOKafkaConsumer(VOUCHER_RESERVED_DLQ, bootstrap_servers=kafka_bootstrap,
                           auto_offset_reset="latest", group_id=None)
    await dlq.start()
    try:
        await dlq.seek_to_end()
        await dlq.getmany(timeout_ms=200)
        await run()
        found: dict[bytes, ConsumerRecord] = {}  # type: ignore[type-arg]
        for _ in range(60):
            done = wanted <= set(found)
            polled = {r.value: r for rs in (await dlq.getmany(timeout_ms=500)).values() for r in rs}
            found.update(polled)
            if done:
                return found
        return found
    finally:
        await dlq.stop()


def saga_event(type_: str, payment: str, booking: str | None = None, **data: Any) -> Any:
    """A booking-events event naming `payment` (the voucher orderId), with the contract's other fields."""
    fields: dict[str, Any] = {
        "BookingConfirmed": {"holdId": str(uuid.uuid4()), "seats": ["A1"], "amountCents": 1000,
                             "paymentId": payment, "seatMapVersion": 1},
        "PaymentFailed": {"paymentId": payment, "reason": "DECLINED"},
        "BookingFailed": {"paymentId": payment, "reason": "HOLD_EXPIRED"},
        "SeatsReleased": {"holdId": str(uuid.uuid4()), "seats": ["A1"], "reason": "EXPIRED", "seatMapVersion": 2},
    }[type_]
    if type_ == "BookingConfirmed" and "discountCents" in BookingConfirmedData.model_fields:
        fields["discountCents"] = 500  # BookingConfirmed carries it (docs/events)
    return booking_event(type_, source="test", booking_id=booking or str(uuid.uuid4()), showtime_id=1,
                         customer_id=1, data={**fields, **data})


async def publish_events(kafka_bootstrap: str, events: list[Any]) -> None:
    """Send booking events to Kafka (key = bookingId: one booking's events keep their order)."""
    producer = idempotent_producer(kafka_bootstrap, client_id="voucher-tests-booking")
    await producer.start()
    try:
        for event in events:
            message = outgoing(event)
            await producer.send_and_wait(message.topic, message.value, key=message.key.encode(),
                                         headers=message.headers)
    finally:
        await producer.stop()


async def statuses(pool: asyncpg.Pool, orders: list[str]) -> dict[str, str]:
    rows = await pool.fetch("SELECT order_id, status FROM voucher_redemption WHERE order_id = ANY($1::varchar[])",
                            orders)
    return {r["order_id"]: r["status"] for r in rows}


async def age(pool: asyncpg.Pool, codes: list[str]) -> None:
    """Make these vouchers' uses older than EXPIRY_TTL."""
    await pool.execute("UPDATE voucher_redemption SET created_at = now() - interval '31 days' "
                       "WHERE voucher_code = ANY($1::varchar[])", codes)


@contextlib.asynccontextmanager
async def watched_statements(dsn: str, size: int = 1) -> AsyncIterator[tuple[asyncpg.Pool, list[str]]]:
    """A pool whose connections record every statement they run."""
    statements: list[str] = []

    async def logged(conn: asyncpg.Connection) -> None:
        conn.add_query_logger(lambda record: statements.append(record.query))

    watched = await asyncpg.create_pool(dsn, min_size=size, max_size=size, init=logged)
    try:
        statements.clear()
        yield watched, statements
    finally:
        await watched.close()
