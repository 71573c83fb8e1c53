"""The compose stack comes up (podman-compose here), a customer journey passes against it, it comes down clean.

Journey: an admin creates a showtime, a customer holds two seats, checks out, pays on the gateway
simulator's hosted page (the Pay button's form post), the hold becomes BOOKED, and the ticket e-mail
naming the booking lands in the SMTP sink's folder.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
from deploy_support import DOTENV, run
from ticketing.auth import issue_token
from ticketing_testing import free_port

STACK = "deploy/compose/stack.sh"


@pytest.fixture(scope="module")
def stack(images: dict[str, str]) -> Iterator[dict[str, str]]:
    ports = {name: str(free_port()) for name in ("HOLD", "PAYMENT", "VOUCHER", "NOTIFIER", "GATEWAY")}
    env = {"COMPOSE_PROJECT_NAME": f"tkt{uuid.uuid4().hex[:8]}", "READY_TIMEOUT": "420",
           "TICKETING_APP_IMAGE": images["APP_IMAGE"], "TICKETING_APP_DEV_IMAGE": images["APP_DEV_IMAGE"],
           "TICKETING_POSTGRES_IMAGE": images["POSTGRES_IMAGE"],
           "TICKETING_REDIS_IMAGE": images["REDIS_IMAGE"], "TICKETING_KAFKA_IMAGE": images["KAFKA_IMAGE"],
           **{f"{name}_PORT": port for name, port in ports.items()}}
    try:
        run([STACK, "up"], env=env, timeout=900)
        yield env
    finally:
        run([STACK, "down"], env=env, timeout=300)
        leftovers = run(["podman", "ps", "-aq", "--filter",
                         f"label=com.docker.compose.project={env['COMPOSE_PROJECT_NAME']}"]).stdout.split()
        volumes = [v for v in run(["podman", "volume", "ls", "-q"]).stdout.split()
                   if v.startswith(env["COMPOSE_PROJECT_NAME"])]
        networks = [n for n in run(["podman", "network", "ls", "--format", "{{.Name}}"]).stdout.split()
                    if n.startswith(env["COMPOSE_PROJECT_NAME"])]
        assert (leftovers, volumes, networks) == ([], [], []), "compose down left resources behind"


def auth(sub: int, role: str = "customer") -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(DOTENV['JWT_SECRET'], sub=str(sub), role=role)}"}  # type: ignore[arg-type]


def wait_for(what: str, check, timeout: float = 120.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while (value := check()) is None or value is False:
        assert time.monotonic() < deadline, f"{what} not seen within {timeout}s"
        time.sleep(0.5)
    return value


def test_a_ticket_is_booked_and_mailed_through_the_compose_stack(stack: dict[str, str]) -> None:
    base = {name: f"http://127.0.0.1:{stack[f'{name.upper()}_PORT']}" for name in ("hold", "payment")}
    showtime, customer = 42, 7
    run([STACK, "exec", "notifier", "python", "-m", "notifier.entrypoints.cli.customers", "upsert",
         "--id", str(customer), "--email", "ana@example.com", "--name", "Ana"], env=stack)
    with httpx.Client(timeout=30) as c:
        # The seat-map page on the hold port can check out on the payment port.
        # (No identity provider in the compose stack: the pages take a pasted token.)
        assert c.get(f"{base['hold']}/pages/config.json").json() == {
            "paymentUrl": base["payment"], "oidcIssuerUrl": "", "oidcClientId": ""}
        r = c.options(f"{base['payment']}/holds/{uuid.uuid4()}/checkout", headers={
            "Origin": base["hold"], "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type,idempotency-key"})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == base["hold"], r.text
        r = c.post(f"{base['hold']}/admin/showtimes", headers=auth(1, "admin"), json={
            "showtimeId": showtime, "title": "Premiere", "startsAt": "2031-12-24T20:00:00Z",
            "priceCents": 1200, "rows": {"A": 20}})
        assert r.status_code == 201, r.text
        r = c.post(f"{base['hold']}/showtimes/{showtime}/holds", headers=auth(customer), json={"seats": ["A5", "A6"]})
        assert r.status_code == 201, r.text
        hold = r.json()
        r = c.post(f"{base['payment']}/holds/{hold['holdId']}/checkout", json={},
                   headers={**auth(customer), "Idempotency-Key": uuid.uuid4().hex})
        assert r.status_code == 201, r.text
        pay_page = r.json()["redirectUrl"]
        assert pay_page.startswith(f"http://127.0.0.1:{stack['GATEWAY_PORT']}/"), pay_page
        r = c.post(pay_page, data={"action": "pay"})  # the hosted page's Pay button
        assert r.status_code < 400, r.text
        status = wait_for("BOOKED", lambda: c.get(f"{base['hold']}/holds/{hold['holdId']}",
                                                  headers=auth(customer)).json()["status"] == "BOOKED")
        assert status
    found = wait_for("the ticket e-mail in the sink", lambda: run(
        [STACK, "exec", "smtp-sink", "grep", "-l", hold["bookingId"], "-r", "/data/mail"], env=stack,
        check=False).stdout.strip() or None)
    assert found.endswith(".eml")
    body = run([STACK, "exec", "smtp-sink", "cat", found], env=stack).stdout
    assert "ana@example.com" in body and hold["bookingId"] in body
