"""Signing in with the chain's identity provider, against a real Keycloak (`deploy/local/idp.sh up`, the realm of
deploy/local/idp/), in Debian's chromium: marked `idp`, run by deploy/tests/background.sh beside the cluster run.

- A customer looks first (what's on, the seat map and its prices, with no account), picks seats, is sent to
  Keycloak's own login page on Hold, comes back to the same seats, holds, pays on the gateway's page, sees the
  booking, and his ticket e-mail reaches his Keycloak address (the SMTP sink) with no operator step.
- A first-time user (made in Keycloak now) buys at once: the platform gave him a customer id at his first token.
- Staff sign in to the door page (their role mapped from Keycloak's realm roles); sign-out ends the provider's
  session; an expired session is renewed silently; tokens of another realm or another audience are refused.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.async_api import Page, expect
from ticketing.auth import issue_token
from ticketing_testing import REPO_ROOT, env, require

from ..stack import Stack, start_stack
from .pages import BOOKING_TIMEOUT_MS, pay, seat

pytestmark = [pytest.mark.e2e, pytest.mark.idp]

IDP = env("IDP_URL", "http://127.0.0.1:8180")
ISSUER = f"{IDP}/realms/ticketing"
CONTACTS_KEY = "contacts-key-for-the-sign-in-tests-0123456789"
LOGS = REPO_ROOT / "var" / "log" / "tests" / "idp"


def _provider_env(urls: dict[str, str]) -> dict[str, dict[str, str]]:
    tokens = {"JWT_JWKS_URL": f"{ISSUER}/protocol/openid-connect/certs", "JWT_ISSUER": ISSUER,
              "JWT_AUDIENCE": "ticketing", "JWT_ROLES_CLAIM": "realm_access.roles"}
    return {"hold": {**tokens, "OIDC_ISSUER_URL": ISSUER, "OIDC_CLIENT_ID": "ticketing-pages",
                     "CONTACTS_API_KEY": CONTACTS_KEY, "PAYMENT_PUBLIC_URL": urls["pay"]},
            "pay": {**tokens, "CORS_ALLOWED_ORIGINS": urls["hold"]},
            "notifier": {"CONTACTS_URL": urls["hold"], "CONTACTS_API_KEY": CONTACTS_KEY}}


class Keycloak:
    """The realm's admin API (the dev bootstrap admin): the test stack's address as a redirect URI, new users."""

    def __init__(self) -> None:
        r = httpx.post(f"{IDP}/realms/master/protocol/openid-connect/token",
                       data={"grant_type": "password", "client_id": "admin-cli", "username": "admin",
                             "password": "admin"}, timeout=30)
        r.raise_for_status()
        self.auth = {"Authorization": f"Bearer {r.json()['access_token']}"}

    def allow_pages_at(self, origin: str) -> None:
        base = f"{IDP}/admin/realms/ticketing/clients"
        [client] = httpx.get(base, params={"clientId": "ticketing-pages"}, headers=self.auth, timeout=30).json()
        client["redirectUris"] = [*client["redirectUris"], f"{origin}/*"]
        httpx.put(f"{base}/{client['id']}", json=client, headers=self.auth, timeout=30).raise_for_status()

    def new_user(self, email: str) -> tuple[str, str]:
        username, password = f"first-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
        r = httpx.post(f"{IDP}/admin/realms/ticketing/users", headers=self.auth, timeout=30, json={
            "username": username, "email": email, "emailVerified": True, "enabled": True, "firstName": "First",
            "lastName": "Timer", "attributes": {"locale": ["vi"]},
            "credentials": [{"type": "password", "value": password, "temporary": False}]})
        assert r.status_code == 201, r.text
        return username, password


def password_token(username: str, password: str, *, realm: str = "ticketing", client: str = "ticketing-tests") -> str:
    r = httpx.post(f"{IDP}/realms/{realm}/protocol/openid-connect/token", timeout=30,
                   data={"grant_type": "password", "client_id": client, "username": username, "password": password,
                         "scope": "openid"})
    assert r.status_code == 200, r.text
    return str(r.json()["access_token"])


@pytest.fixture(scope="module")
def idp_stack(migrated_dsn, kafka_bootstrap, redis_url, tmp_path_factory) -> Iterator[Stack]:  # type: ignore[no-untyped-def]
    try:
        httpx.get(f"{ISSUER}/.well-known/openid-configuration", timeout=5).raise_for_status()
    except httpx.HTTPError:
        require("Keycloak", False, f"no Keycloak at {IDP}; run `make idp-up`")
    with start_stack(migrated_dsn, bootstrap=kafka_bootstrap, redis_url=redis_url, jwt_secret=env("JWT_SECRET"),
                     mail_dir=tmp_path_factory.mktemp("idp-mail"), logs=LOGS,
                     services=("smtp", "sim", "hold", "pay", "notifier"), extra_env=_provider_env) as stack:
        Keycloak().allow_pages_at(stack.url["hold"])
        yield stack


async def new_showtime(stack: Stack) -> tuple[int, str]:
    """On sale within the catalogue's default week."""
    sid, title = random.randint(10**9, 2**52), f"Sign-in {uuid.uuid4().hex[:6]}"
    starts = (datetime.now(UTC) + timedelta(days=2)).replace(microsecond=0).isoformat()
    admin = {"Authorization": f"Bearer {issue_token(stack.jwt_secret, sub='1', role='admin')}"}
    async with httpx.AsyncClient() as client:
        r = await client.post(f"{stack.url['hold']}/admin/showtimes", headers=admin, json={
            "showtimeId": sid, "title": title, "startsAt": starts, "priceCents": 1250, "rows": {"A": 8}})
    assert r.status_code == 201, r.text
    return sid, title


async def keycloak_login(page: Page, username: str, password: str) -> None:
    """Keycloak's own login page (not ours), then back."""
    await page.wait_for_url(f"{ISSUER}/protocol/openid-connect/auth*")
    await page.fill("#username", username)
    await page.fill("#password", password)
    await page.click("#kc-login")


def mail_to(stack: Stack, address: str, booking_id: str, timeout: float = BOOKING_TIMEOUT_MS / 1000) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in Path(stack.mail_dir).glob("*.eml"):
            text = path.read_text(errors="replace")
            if f"Delivered-To: {address}" in text and booking_id in text:
                return text
        time.sleep(0.3)
    raise AssertionError(f"no e-mail to {address} about booking {booking_id}")


async def test_a_customer_looks_signs_in_on_hold_comes_back_to_his_seats_pays_and_gets_his_ticket(
        browser, idp_stack, screenshots) -> None:
    sid, title = await new_showtime(idp_stack)
    context = await browser.new_context(viewport={"width": 1100, "height": 760})
    page = await context.new_page()
    await page.goto(f"{idp_stack.url['hold']}/pages/?day=2")  # what's on, with no account
    await page.locator(f'#showtimes [data-showtime="{sid}"] a').click()
    await page.wait_for_url(f"**/pages/showtimes/{sid}")
    await expect(seat(page, "A1")).to_be_visible(timeout=30_000)
    await expect(page.locator("#prices")).to_contain_text("€12.50")
    await expect(page.locator("#customer")).to_have_text("nobody (not signed in)")
    for code in ("A3", "A4"):
        await seat(page, code).click()
    await page.click("#hold")
    await keycloak_login(page, "alice", "alice-dev")

    await page.wait_for_url(f"**/pages/showtimes/{sid}")
    await expect(page.locator("#picked")).to_have_text("Picked: A3, A4", timeout=30_000)
    await expect(page.locator("#customer")).to_have_text("Alice Almeida")
    assert "code=" not in page.url
    stored = await page.evaluate("Object.keys(localStorage).filter((k) => k.startsWith('oidc.'))")
    assert stored == []  # the provider's tokens are in this tab's sessionStorage only
    async with page.expect_response(lambda r: r.url.endswith("/holds") and r.request.method == "POST") as held:
        await page.click("#hold")
    assert (await held.value).status == 201
    booking_id = await page.evaluate("state.hold.bookingId")
    await pay(page)
    await expect(page.locator("#result")).to_have_text("Booked: A3, A4. Your tickets are on their way by e-mail.",
                                                       timeout=BOOKING_TIMEOUT_MS)
    await page.screenshot(path=str(screenshots / "sign-in-booked.png"), full_page=True)

    await page.goto(f"{idp_stack.url['hold']}/pages/bookings")
    await expect(page.locator("#bookings")).to_contain_text(title, timeout=30_000)
    email = mail_to(idp_stack, "alice@example.com", booking_id)  # nobody put Alice in the directory
    assert "Alice Almeida" in email or "Alice" in email

    # An expired session is renewed silently (its refresh token), no login page.
    key = f"oidc.user:{ISSUER}:ticketing-pages"
    before = json.loads(await page.evaluate(f"sessionStorage.getItem('{key}')"))
    await page.evaluate(f"""(() => {{ const u = JSON.parse(sessionStorage.getItem('{key}'));
        u.expires_at = Math.floor(Date.now() / 1000) - 30; sessionStorage.setItem('{key}', JSON.stringify(u)); }})()""")
    await page.reload()
    await expect(page.locator("#bookings")).to_contain_text(title, timeout=30_000)
    after = json.loads(await page.evaluate(f"sessionStorage.getItem('{key}')"))
    assert after["access_token"] != before["access_token"] and after["expires_at"] > time.time()
    assert urlsplit(page.url).netloc == urlsplit(idp_stack.url["hold"]).netloc

    # Sign-out ends the provider's session too: back on the page, signed out, and Hold asks for the login again.
    await page.click("#sign-out")
    await page.wait_for_url(f"{idp_stack.url['hold']}/pages/bookings*")
    await expect(page.locator("#sign-in")).to_be_visible(timeout=30_000)
    assert await page.evaluate(f"sessionStorage.getItem('{key}')") is None
    await page.goto(f"{idp_stack.url['hold']}/pages/showtimes/{sid}")
    await seat(page, "A5").click()
    await page.click("#hold")
    await page.wait_for_url(f"{ISSUER}/protocol/openid-connect/auth*")  # no session left at Keycloak
    await expect(page.locator("#username")).to_be_visible()
    await context.close()


async def test_a_first_time_user_buys_at_once_and_his_ticket_reaches_him(idp_stack) -> None:
    sid, _ = await new_showtime(idp_stack)
    address = f"first-{uuid.uuid4().hex[:8]}@example.com"
    username, password = Keycloak().new_user(address)
    auth = {"Authorization": f"Bearer {password_token(username, password)}"}
    hold_url, pay_url = idp_stack.url["hold"], idp_stack.url["pay"]
    async with httpx.AsyncClient(timeout=30) as client:
        r = await client.post(f"{hold_url}/showtimes/{sid}/holds", headers=auth, json={"seats": ["A7"]})
        assert r.status_code == 201, r.text
        booking, hold_id = r.json()["bookingId"], r.json()["holdId"]
        r = await client.post(f"{pay_url}/holds/{hold_id}/checkout", json={},
                              headers={**auth, "Idempotency-Key": uuid.uuid4().hex})
        assert r.status_code == 201, r.text  # payment-service found the same customer id (hold-service's mapping)
        hosted = urlsplit(r.json()["redirectUrl"])
        session = hosted.path.rstrip("/").rsplit("/", 1)[-1]
        r = await client.post(f"{hosted.scheme}://{hosted.netloc}/sim/sessions/{session}/pay",
                              json={"outcome": "succeeded", "delivery": "normal"})
        assert r.status_code == 200, r.text
        mail_to(idp_stack, address, booking)
        mine = (await client.get(f"{hold_url}/bookings", headers=auth)).json()["bookings"]
        assert [b["status"] for b in mine if b["bookingId"] == booking] == ["BOOKED"]


async def test_staff_sign_in_to_the_door_page(browser, idp_stack) -> None:
    context = await browser.new_context()
    page = await context.new_page()
    await page.goto(f"{idp_stack.url['hold']}/pages/door")
    await page.click("#sign-in")
    await keycloak_login(page, "sam", "sam-dev")
    await page.wait_for_url(f"{idp_stack.url['hold']}/pages/door*")
    await expect(page.locator("#signed-in-as")).to_have_text("Signed in as Sam Sousa", timeout=30_000)
    await expect(page.locator("#token-box")).to_be_hidden()
    token = await page.evaluate("Auth.token()")
    async with httpx.AsyncClient() as client:  # the staff role, mapped from Keycloak's realm roles
        r = await client.post(f"{idp_stack.url['hold']}/checkins", headers={"Authorization": f"Bearer {token}"},
                              json={"ticket": "not-a-ticket", "showtimeId": 1, "door": "A"})
        refused = await client.get(f"{idp_stack.url['hold']}/bookings", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 422 and r.json()["error"] == "TICKET_INVALID", r.text
    assert refused.status_code == 403
    await context.close()


async def test_tokens_of_another_realm_or_audience_are_refused(idp_stack) -> None:
    other_realm = password_token("mallory", "mallory-dev", realm="elsewhere")
    other_audience = password_token("alice", "alice-dev", client="another-app")
    ours = password_token("alice", "alice-dev")
    async with httpx.AsyncClient() as client:
        for base in (idp_stack.url["hold"], idp_stack.url["pay"]):
            for token in (other_realm, other_audience):
                r = await client.get(f"{base}/bookings" if base == idp_stack.url["hold"] else
                                     f"{base}/payments/{uuid.uuid4()}", headers={"Authorization": f"Bearer {token}"})
                assert r.status_code == 401, (base, r.text)
        r = await client.get(f"{idp_stack.url['hold']}/bookings", headers={"Authorization": f"Bearer {ours}"})
        assert r.status_code == 200, r.text
