"""The e2e stack: hold-service (API + worker), payment-service (API + worker) and the gateway simulator
as real processes on free ports, on the TEST database and real Kafka, with short timings."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from ticketing.events import BOOKING_EVENTS
from ticketing.pytest_plugin import env
from ticketing.testing import free_port, service_process

ROOT = Path(__file__).resolve().parents[4]
LOGS = ROOT / "var" / "log" / "tests" / "e2e"
HOLD_MIGRATIONS = ROOT / "services/hold-service/src/hold_service/sql/migrations"
PAY_MIGRATIONS = ROOT / "services/payment-service/src/payment_service/sql/migrations"
HOLD_TTL = 20  # long enough for the crash test's two process starts on a busy 2-core machine
RECONCILE_AFTER = 20
SECRET = "whsec_e2e_only_0123456789abcdef01234567"


@dataclass
class Stack:
    hold_url: str
    pay_url: str
    sim_url: str
    hold_dsn: str
    pay_dsn: str
    pay_env: dict[str, str]
    jwt_secret: str


async def _caught_up(bootstrap: str, groups: list[str], timeout: float = 180) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await admin.start()
    await consumer.start()
    try:
        # Not consumer.partitions_for_topic: a consumer subscribed to nothing has no metadata, gives None,
        # and every lag below would be a vacuous 0.
        (topic,) = await admin.describe_topics([BOOKING_EVENTS])
        parts = [TopicPartition(BOOKING_EVENTS, p["partition"]) for p in topic["partitions"]]
        if not parts:
            raise RuntimeError(f"topic {BOOKING_EVENTS} has no partitions")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ends = await consumer.end_offsets(parts)
            lags = []
            for group in groups:
                done = await admin.list_consumer_group_offsets(group)
                lags.append(sum(ends[tp] - (done[tp].offset if tp in done else 0) for tp in parts))
            if max(lags) < 20:
                return
            await asyncio.sleep(1)
        raise TimeoutError(f"consumers did not catch up: lags {lags}")
    finally:
        await consumer.stop()
        await admin.close()


def _uvicorn(module: str, port: int) -> list[str]:
    return ["-m", "uvicorn", "--factory", f"{module}.entrypoints.api.app:get_application",
            "--host", "127.0.0.1", "--port", str(port)]


@pytest.fixture(scope="session")
def stack(migrated_dsn, kafka_bootstrap, redis_url) -> Iterator[Stack]:  # type: ignore[no-untyped-def]
    hold_dsn = migrated_dsn("HOLD_DATABASE_URL", HOLD_MIGRATIONS)
    pay_dsn = migrated_dsn("PAYMENT_DATABASE_URL", PAY_MIGRATIONS)
    ports = {name: free_port() for name in ("hold", "pay", "sim")}
    urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    prefix = f"e2e-{uuid.uuid4().hex[:8]}-"
    common = {"KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "KAFKA_GROUP_PREFIX": prefix, "REDIS_URL": redis_url,
              "GATEWAY_WEBHOOK_SECRET": SECRET, "APP_ENV": "test"}
    hold_env = {**common, "HOLD_DATABASE_URL": hold_dsn, "HOLD_TTL_SECONDS": str(HOLD_TTL),
                "SWEEP_INTERVAL_SECONDS": "1", "HOLD_RATE_LIMIT_PER_MINUTE": "10000",
                "HOLD_RATE_LIMIT_PER_IP_PER_MINUTE": "1000000"}
    pay_env = {**common, "PAYMENT_DATABASE_URL": pay_dsn, "HOLD_SERVICE_URL": urls["hold"],
               "GATEWAY_URL": urls["sim"], "PUBLIC_CALLBACK_URL": f"{urls['pay']}/payments/callback",
               "RECONCILE_INTERVAL_SECONDS": "1", "RECONCILE_AFTER_SECONDS": str(RECONCILE_AFTER),
               "PAYMENT_SESSION_TTL_SECONDS": "480"}
    sim_env = {**common, "GATEWAY_SIMULATOR_PORT": str(ports["sim"]), "GATEWAY_PUBLIC_URL": urls["sim"],
               "CALLBACK_BACKOFF_INITIAL": "0.2"}
    LOGS.mkdir(parents=True, exist_ok=True)
    with ExitStack() as procs:
        def start(name: str, args: list[str], env_: dict[str, str], ready: str | None) -> None:
            procs.enter_context(service_process(args, env_, ready_url=ready, log_path=LOGS / f"{name}.log"))
        start("simulator", ["-m", "gateway_simulator"], sim_env, f"{urls['sim']}/healthz")
        start("hold-api", _uvicorn("hold_service", ports["hold"]), hold_env, f"{urls['hold']}/healthz")
        start("hold-worker", ["-m", "hold_service.entrypoints.worker"], hold_env, None)
        start("pay-api", _uvicorn("payment_service", ports["pay"]), pay_env, f"{urls['pay']}/healthz")
        start("pay-worker", ["-m", "payment_service.entrypoints.worker"], pay_env, None)
        # A fresh consumer group starts at the earliest offset of the shared topic: wait until both
        # consumers have caught up, or short hold TTLs would run out while they read history.
        asyncio.run(_caught_up(kafka_bootstrap, [f"{prefix}hold-service.payments",
                                                 f"{prefix}payment-service.booking-events"]))
        yield Stack(hold_url=urls["hold"], pay_url=urls["pay"], sim_url=urls["sim"], hold_dsn=hold_dsn,
                    pay_dsn=pay_dsn, pay_env=pay_env, jwt_secret=env("JWT_SECRET"))
