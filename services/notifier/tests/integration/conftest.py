"""Real processes for the notifier's integration tests: the SMTP sink and the faust worker."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import notifier
import pytest
import pytest_asyncio
from aiokafka import AIOKafkaProducer
from ticketing.events import BOOKING_EVENTS, booking_event, outgoing
from ticketing_testing import free_port, service_process
from ticketing_testing.workers import group_prefix

MIGRATIONS = Path(notifier.__file__).resolve().parent / "sql" / "migrations"
LOGS = Path(__file__).resolve().parents[4] / "var" / "log"
# A stable group for these tests (one per xdist worker): each run only reads what was produced since the previous run.
GROUP_PREFIX = group_prefix("itest-")


def wait_port(port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {port}")


@pytest.fixture(scope="session")
def notifier_dsn(migrated_dsn: Any) -> str:
    return str(migrated_dsn("NOTIFIER_DATABASE_URL", MIGRATIONS))


@pytest.fixture(scope="session")
def mail_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mail")


@contextmanager
def sink_process(port: int, mail_dir: Path, *options: str) -> Iterator[int]:
    """The SMTP sink as its own process (`options`: --no-smtputf8, --refuse-recipients REGEX ...)."""
    LOGS.mkdir(parents=True, exist_ok=True)
    sink = ["-m", "smtp_sink", "--port", str(port), "--dir", str(mail_dir), *options]
    with service_process(sink, {}, log_path=LOGS / "itest-smtp-sink.log"):
        wait_port(port)
        yield port


@pytest.fixture(scope="session")
def start_sink() -> Any:
    return sink_process


@pytest.fixture(scope="session")
def smtp_sink(mail_dir: Path) -> Iterator[int]:
    # Refuses `refused-*` recipients for good (550), as a real server refuses an unknown mailbox, and
    # `deferred-*` for now (451), as a full mailbox or greylisting would.
    with sink_process(free_port(), mail_dir, "--refuse-recipients", "^refused-",
                      "--defer-recipients", "^deferred-") as port:
        yield port


@pytest.fixture(scope="session")
def worker_env(notifier_dsn: str, kafka_bootstrap: str, smtp_sink: int, test_seed: str) -> dict[str, str]:
    return {"NOTIFIER_DATABASE_URL": notifier_dsn, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
            "KAFKA_GROUP_PREFIX": GROUP_PREFIX, "SMTP_PORT": str(smtp_sink), "QR_SIGNING_KEY": test_seed,
            "SENDER_INTERVAL_SECONDS": "0.5"}


@contextmanager
def notifier_worker(env: dict[str, str]) -> Iterator[Any]:
    port = free_port()
    with service_process(["-m", "notifier.entrypoints.worker"], {**env, "HTTP_PORT": str(port)},
                         ready_url=f"http://127.0.0.1:{port}/readyz", timeout=90,
                         log_path=LOGS / "itest-notifier-worker.log") as proc:
        proc.url = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]  # its ops pages (/metrics)
        yield proc


@pytest.fixture(scope="session")
def start_worker(worker_env: dict[str, str]) -> Any:
    return lambda: notifier_worker(worker_env)


@pytest_asyncio.fixture(scope="session")
async def producer(kafka_bootstrap: str) -> AsyncIterator[AIOKafkaProducer]:
    p = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, enable_idempotence=True)
    await p.start()
    yield p
    await p.stop()


@pytest.fixture(scope="session")
def make_confirmed() -> Any:
    return confirmed


def confirmed(customer_id: int, *, seats: list[str] | None = None, amount: int = 2450,
              booking_id: uuid.UUID | None = None, showtime_id: int | None = None) -> Any:
    return booking_event("BookingConfirmed", source="itest", booking_id=booking_id or uuid.uuid4(),
                         showtime_id=showtime_id or (uuid.uuid4().int % 10**9), customer_id=customer_id,
                         data={"holdId": uuid.uuid4(), "seats": seats or ["F5", "F6"], "amountCents": amount,
                               "discountCents": 0, "paymentId": uuid.uuid4(), "seatMapVersion": 1})


@pytest.fixture(scope="session")
def publish(producer: AIOKafkaProducer) -> Any:
    async def send(event: Any) -> None:
        message = outgoing(event)
        await producer.send_and_wait(BOOKING_EVENTS, message.value, key=message.key.encode(), headers=message.headers)
    return send


@pytest.fixture(scope="session")
def new_customer_id() -> Any:
    # Unique per call and per run, inside BIGINT, far from hand-made ids.
    return lambda: 10**12 + uuid.uuid4().int % 10**11
