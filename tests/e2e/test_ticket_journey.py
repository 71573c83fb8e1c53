"""The customer journey, end to end with real processes: hold -> checkout -> gateway payment ->
BookingConfirmed -> ticket e-mail with a signed QR in the sink's folder, and loyalty points credited.

Processes (real Kafka, Postgres, Redis; the TEST database; free ports): hold-service API + worker,
payment-service API + worker, the gateway simulator, the SMTP sink and the notifier worker.
Only the DESIGN.md HTTP contract is used to drive it; outcomes are asserted in Postgres and on disk.
"""

from __future__ import annotations

import base64
import io
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from email import policy
from email.parser import BytesParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest
import zxingcpp
from notifier.customers import upsert_all
from notifier.domain.messages import Contact
from notifier.domain.tickets import (
    private_key_from_seed,
    public_key_from_text,
    public_key_text,
    verify_ticket,
)
from PIL import Image
from ticketing.auth import issue_token
from ticketing.pytest_plugin import env
from ticketing.testing import eventually, free_port, service_process

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "var" / "log" / "tests" / "e2e-ticket-journey"
MIGRATIONS = {
    "HOLD_DATABASE_URL": ROOT / "services/hold-service/src/hold_service/sql/migrations",
    "PAYMENT_DATABASE_URL": ROOT / "services/payment-service/src/payment_service/sql/migrations",
    "NOTIFIER_DATABASE_URL": ROOT / "services/notifier/src/notifier/sql/migrations",
}
SEED = base64.b64encode(b"e2e-ticket-journey-seed-32-bytes").decode()
WEBHOOK_SECRET = "whsec_ticket_journey_0123456789abcdef0123"


def _uvicorn(factory: str, port: int) -> list[str]:
    return ["-m", "uvicorn", "--factory", factory, "--host", "127.0.0.1", "--port", str(port)]


@pytest.fixture(scope="module")
def journey(migrated_dsn: Any, kafka_bootstrap: str, redis_url: str,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    dsn = {name: migrated_dsn(name, folder) for name, folder in MIGRATIONS.items()}
    ports = {name: free_port() for name in ("hold", "pay", "sim", "smtp", "notifier")}
    url = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    mail_dir = tmp_path_factory.mktemp("journey-mail")
    common = {"KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "REDIS_URL": redis_url, "APP_ENV": "test",
              "KAFKA_GROUP_PREFIX": f"e2e-journey-{uuid.uuid4().hex[:8]}-",
              "GATEWAY_WEBHOOK_SECRET": WEBHOOK_SECRET, **dsn}
    hold_env = {**common, "HOLD_RATE_LIMIT_PER_MINUTE": "10000", "HOLD_RATE_LIMIT_PER_IP_PER_MINUTE": "1000000"}
    pay_env = {**common, "HOLD_SERVICE_URL": url["hold"], "GATEWAY_URL": url["sim"],
               "PUBLIC_CALLBACK_URL": f"{url['pay']}/payments/callback"}
    sim_env = {**common, "GATEWAY_SIMULATOR_PORT": str(ports["sim"]), "GATEWAY_PUBLIC_URL": url["sim"]}
    notifier_env = {**common, "SMTP_PORT": str(ports["smtp"]), "HTTP_PORT": str(ports["notifier"]),
                    "QR_SIGNING_KEY": SEED, "SENDER_INTERVAL_SECONDS": "0.5"}
    LOGS.mkdir(parents=True, exist_ok=True)
    with ExitStack() as procs:
        def start(name: str, args: list[str], env_: dict[str, str], ready: str | None) -> None:
            procs.enter_context(service_process(args, env_, ready_url=ready, timeout=90,
                                                log_path=LOGS / f"{name}.log"))
        start("smtp-sink", ["-m", "notifier.smtp_sink", "--port", str(ports["smtp"]), "--dir", str(mail_dir)],
              {}, None)
        start("simulator", _uvicorn("gateway_simulator.app:get_application", ports["sim"]), sim_env,
              f"{url['sim']}/healthz")
        start("hold-api", _uvicorn("hold_service.entrypoints.api.app:get_application", ports["hold"]),
              hold_env, f"{url['hold']}/healthz")
        start("hold-worker", ["-m", "hold_service.entrypoints.worker"], hold_env, None)
        start("pay-api", _uvicorn("payment_service.entrypoints.api.app:get_application", ports["pay"]),
              pay_env, f"{url['pay']}/healthz")
        start("pay-worker", ["-m", "payment_service.entrypoints.worker"], pay_env, None)
        start("notifier-worker", ["-m", "notifier.entrypoints.worker"], notifier_env,
              f"{url['notifier']}/readyz")
        yield {"url": url, "dsn": dsn, "mail_dir": mail_dir, "jwt": env("JWT_SECRET")}


def _auth(secret: str, sub: int, role: str = "customer") -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(secret, sub=str(sub), role=role)}"}  # type: ignore[arg-type]


async def _fetchval(dsn: str, sql: str, *args: Any) -> Any:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval(sql, *args)
    finally:
        await conn.close()


def _ticket_emails(mail_dir: Path, booking_id: str) -> list[Path]:
    return [p for p in mail_dir.glob("*.eml") if booking_id.encode() in p.read_bytes()]


async def test_hold_checkout_pay_then_ticket_email_and_points(journey: dict[str, Any]) -> None:
    url, dsn, secret = journey["url"], journey["dsn"], journey["jwt"]
    showtime, customer = 10**9 + uuid.uuid4().int % 10**9, 10**11 + uuid.uuid4().int % 10**11
    await upsert_all(dsn["NOTIFIER_DATABASE_URL"], [Contact(customer, f"c{customer}@example.com", "Journey")])
    async with httpx.AsyncClient(timeout=30) as c:
        r = await c.post(f"{url['hold']}/admin/showtimes", headers=_auth(secret, 1, "admin"), json={
            "showtimeId": showtime, "title": "Journey", "startsAt": "2031-01-01T20:00:00Z",
            "priceCents": 1200, "rows": {"F": 8}})
        assert r.status_code == 201, r.text
        r = await c.post(f"{url['hold']}/showtimes/{showtime}/holds", headers=_auth(secret, customer),
                         json={"seats": ["F5", "F6"]})
        assert r.status_code == 201, r.text
        hold = r.json()
        r = await c.post(f"{url['pay']}/holds/{hold['holdId']}/checkout", json={},
                         headers={**_auth(secret, customer), "Idempotency-Key": uuid.uuid4().hex})
        assert r.status_code == 201, r.text
        session_id = urlsplit(r.json()["redirectUrl"]).path.rstrip("/").rsplit("/", 1)[-1]
        r = await c.post(f"{url['sim']}/sim/sessions/{session_id}/pay",
                         json={"outcome": "succeeded", "delivery": "normal"})
        assert r.status_code == 200, r.text
    booking = hold["bookingId"]
    await eventually(lambda: _sent(dsn["NOTIFIER_DATABASE_URL"], journey["mail_dir"], booking), timeout=90)
    points = await _fetchval(dsn["NOTIFIER_DATABASE_URL"],
                             "SELECT points FROM loyalty_points WHERE booking_id = $1::uuid", booking)
    assert points == hold["amountCents"] // 100
    [path] = _ticket_emails(journey["mail_dir"], booking)
    msg = BytesParser(policy=policy.default).parsebytes(path.read_bytes())
    assert booking in msg["Subject"]
    [png] = [p for p in msg.iter_attachments() if p.get_content_type() == "image/png"]  # type: ignore[attr-defined]
    # zxing may report the one QR code more than once (found at two scales): one distinct text is what counts.
    found = zxingcpp.read_barcodes(Image.open(io.BytesIO(png.get_content())), formats=zxingcpp.BarcodeFormat.QRCode)
    [text] = {r.text for r in found}
    key = public_key_from_text(public_key_text(private_key_from_seed(SEED)))
    payload = verify_ticket(text, key)
    assert (payload.booking_id, payload.showtime_id) == (booking, showtime)
    assert sorted(payload.seats) == ["F5", "F6"]


async def _sent(dsn: str, mail_dir: Path, booking: str) -> bool:
    sent = await _fetchval(dsn, "SELECT count(*) FROM email_outbox WHERE booking_id = $1::uuid"
                                " AND status = 'SENT'", booking)
    return bool(sent == 1 and len(_ticket_emails(mail_dir, booking)) == 1)
