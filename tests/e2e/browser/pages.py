"""What the page tests do the same way: a showtime made by an admin, a customer signed in on the seat-map page
as the README says (a pasted token, in a browser session of its own), a seat on a page, paying on the
gateway's hosted page."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
from playwright.async_api import Page, expect
from ticketing.auth import issue_token

BOOKING_TIMEOUT_MS = 60_000  # gateway callback -> payment-service -> Kafka -> hold-service's consumer


def seat(page: Page, code: str) -> Any:
    return page.locator(f'#map [data-code="{code}"]')


def admin(stack: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(stack.jwt_secret, sub='1', role='admin')}"}


async def new_showtime(stack: Any, rows: dict[str, int], title: str = "Browser",
                       starts_at: str = "2031-05-01T20:00:00Z") -> int:
    sid = random.randint(10**9, 2**52)
    async with httpx.AsyncClient() as client:
        r = await client.post(f"{stack.hold_url}/admin/showtimes", headers=admin(stack),
                              json={"showtimeId": sid, "title": title, "startsAt": starts_at,
                                    "priceCents": 1250, "rows": rows})
    assert r.status_code == 201, r.text
    return sid


async def open_with_token_box(page: Page, url: str) -> None:
    """Open a page of the dev path and wait for its token box, which shows once the page has read its sign-in
    settings (/pages/config.json). That read has been seen to stall past a minute on a busy machine, the page
    and its scripts served (cause not found): after 20 s the page is loaded once more."""
    await page.goto(url)
    try:
        await expect(page.locator("#token")).to_be_visible(timeout=20_000)
    except AssertionError:
        await page.reload()
        await expect(page.locator("#token")).to_be_visible(timeout=60_000)


async def signed_in(browser: Any, stack: Any, sid: int, customer: int) -> Page:
    """A browser session of its own (its own localStorage) on the showtime's page, the customer's token pasted."""
    context = await browser.new_context(viewport={"width": 1100, "height": 720})
    page = await context.new_page()
    await open_with_token_box(page, f"{stack.hold_url}/pages/showtimes/{sid}")
    await page.fill("#token", issue_token(stack.jwt_secret, sub=str(customer), role="customer"))
    await page.click("#save-token")
    return page


async def on_the_map(page: Page, customer: int) -> None:
    """The page shows the live map, A1 drawn, the customer signed in."""
    await expect(page.locator("body")).to_have_attribute("data-stage", "map", timeout=30_000)
    await expect(page.locator("#live")).to_have_attribute("data-state", "live")
    await expect(seat(page, "A1")).to_be_visible()
    await expect(page.locator("#customer")).to_have_text(str(customer))


async def hold(page: Page, codes: list[str]) -> dict[str, str]:
    """Pick the seats and hold them: the hold request's headers (201 asserted)."""
    for code in codes:
        await seat(page, code).click()
    await expect(page.locator("#picked")).to_have_text(f"Picked: {', '.join(codes)}")
    async with page.expect_response(lambda r: r.url.endswith("/holds") and r.request.method == "POST") as held:
        await page.click("#hold")
    response = await held.value
    assert response.status == 201, await response.text()
    return await response.request.all_headers()


async def pay(page: Page) -> None:
    """Pay on the gateway's hosted page, opened by the page's Pay button."""
    async with page.expect_popup() as popup:
        await page.click("#checkout")
    payment = await popup.value
    await payment.wait_for_load_state()
    await expect(payment.locator("h1")).to_have_text("Simulated checkout")
    await payment.click("button[value=pay]")
    await expect(payment.locator("h1")).to_have_text("Payment paid")


def staff(stack: Any, sub: str = "2") -> str:
    return issue_token(stack.jwt_secret, sub=sub, role="staff")


async def soon_showtime(stack: Any, rows: dict[str, int], minutes: int = 30) -> int:
    """A showtime starting in `minutes`: inside the door's check-in window, still on sale."""
    starts = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=minutes)
    return await new_showtime(stack, rows, "Door", starts.isoformat())


async def booked(stack: Any, sid: int, seats: list[str], customer: int | None = None) -> dict[str, Any]:
    """A paid booking of `seats` by `customer` (default: a new one): hold, checkout, the simulator's test control
    pays; as GET /bookings lists it once BOOKED, with its signed ticket."""
    token = issue_token(stack.jwt_secret, sub=str(customer or random.randint(10**6, 10**9)), role="customer")
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=30) as client:
        r = await client.post(f"{stack.hold_url}/showtimes/{sid}/holds", headers=auth, json={"seats": seats})
        assert r.status_code == 201, r.text
        booking = r.json()["bookingId"]
        r = await client.post(f"{stack.pay_url}/holds/{r.json()['holdId']}/checkout", json={},
                              headers={**auth, "Idempotency-Key": uuid.uuid4().hex})
        assert r.status_code == 201, r.text
        hosted = urlsplit(r.json()["redirectUrl"])
        session = hosted.path.rstrip("/").rsplit("/", 1)[-1]
        r = await client.post(f"{hosted.scheme}://{hosted.netloc}/sim/sessions/{session}/pay",
                              json={"outcome": "succeeded", "delivery": "normal"})
        assert r.status_code == 200, r.text
        deadline = time.monotonic() + BOOKING_TIMEOUT_MS / 1000
        while time.monotonic() < deadline:
            r = await client.get(f"{stack.hold_url}/bookings", headers=auth)
            mine = [b for b in r.json()["bookings"] if b["bookingId"] == booking and b["status"] == "BOOKED"]
            if mine:
                return dict(mine[0])
            await asyncio.sleep(0.2)
    raise AssertionError(f"booking {booking} was not BOOKED in time")


class Link:
    """A TCP path to a server that the test can cut and mend, as a scanner's network goes and comes back: a page
    opened through it (at `url`) reaches the server only through it, and so does the page's service worker, which
    the browser's offline emulation does not cover. The address stays the same, so the page's origin (its
    storage, its service worker) does too."""

    def __init__(self, target: str) -> None:
        split = urlsplit(target)
        self.host, self.target_port = split.hostname or "127.0.0.1", split.port or 80
        self.port = 0
        self.server: asyncio.Server | None = None
        self.streams: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def mend(self) -> None:
        self.server = await asyncio.start_server(self._pipe, self.host, self.port)
        self.port = self.server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        """No connection is taken any more, and those open are closed: every call fails, as with no network."""
        assert self.server is not None
        self.server.close()
        for stream in list(self.streams):
            stream.close()
        await self.server.wait_closed()

    async def _pipe(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        try:
            server_in, server_out = await asyncio.open_connection(self.host, self.target_port)
        except OSError:
            client_out.close()
            return
        self.streams |= {client_out, server_out}

        async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, RuntimeError):
                pass
            finally:
                sink.close()
                self.streams.discard(sink)

        await asyncio.gather(copy(client_in, server_out), copy(server_in, client_out))
