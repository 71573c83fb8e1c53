"""The customer's page behind a waiting room, in a real browser (Debian's chromium, Playwright).

A showtime of four seats whose room lets one customer choose at a time (activeLimit 1). Ana, Ben and Cleo open
its page: each sees the film and its start, not the showtime's number. Ana is let in; Ben and Cleo wait, each
shown his place and an estimated wait. Ana holds two seats (her hold carries the room's admission token) and
pays: her turn is over, Ben is let in, with nobody touching his page, and holds the other two. When Ben has
paid every seat is booked, and Cleo, still in the queue, is told the showtime is sold out. Screenshots go to
var/screenshots/. The operator's page shows the queue's length and who is choosing seats. Every wait is for a
condition on the page, never a fixed sleep.
"""

from __future__ import annotations

import random

import httpx
import pytest
from playwright.async_api import expect
from ticketing.auth import issue_token

from .pages import BOOKING_TIMEOUT_MS, admin, hold, new_showtime, on_the_map, pay, seat, signed_in

pytestmark = pytest.mark.e2e

FILM = "Dune: Part Three"
ADMITTED_TIMEOUT_MS = 90_000  # the slot ends with the payment's event (Kafka), then the next poll admits


async def test_customers_queue_are_let_in_one_at_a_time_hold_pay_and_are_told_sold_out(browser, page_stack,
                                                                                        screenshots) -> None:
    sid = await new_showtime(page_stack, {"A": 4}, title=FILM)
    async with httpx.AsyncClient() as client:
        r = await client.put(f"{page_stack.hold_url}/admin/showtimes/{sid}/waiting-room", headers=admin(page_stack),
                             json={"enabled": True, "activeLimit": 1})
    assert r.status_code == 200, r.text
    ana, ben, cleo = (random.randint(10**6, 10**9) for _ in range(3))

    first = await signed_in(browser, page_stack, sid, ana)
    await on_the_map(first, ana)  # alone in the queue: let in at its first step
    await expect(first.locator("#message")).to_contain_text("It is your turn")
    await expect(first.locator("#title")).to_have_text(FILM)
    await expect(first.locator("#starts-at")).to_contain_text("2031")
    await expect(first.locator("header")).not_to_contain_text(str(sid))

    second = await signed_in(browser, page_stack, sid, ben)
    await expect(second.locator("body")).to_have_attribute("data-stage", "queue")
    await expect(second.locator("#waiting-room")).to_be_visible()
    await expect(second.locator("#queue-position")).to_have_text("1")
    await expect(second.locator("#queue-wait")).to_have_text(_estimate())
    await expect(second.locator("#map")).to_be_hidden()
    third = await signed_in(browser, page_stack, sid, cleo)
    await expect(third.locator("#queue-position")).to_have_text("2")
    await expect(third.locator("#title")).to_have_text(FILM)
    await second.screenshot(path=str(screenshots / "waiting-room-queued.png"), full_page=True)
    operator = await (await browser.new_context()).new_page()  # the room's figures, with an operator's token
    await operator.goto(f"{page_stack.hold_url}/pages/showtimes/{sid}/operator")
    await operator.fill("#token", admin(page_stack)["Authorization"].removeprefix("Bearer "))
    await operator.click("#save-token")
    await expect(operator.locator("#queue-length")).to_have_text("2", timeout=10_000)
    await expect(operator.locator("#room-active")).to_have_text("1")
    await expect(operator.locator("#room-state")).to_have_text("on (forced by an operator)")
    await operator.screenshot(path=str(screenshots / "waiting-room-operator.png"), full_page=True)

    headers = await hold(first, ["A1", "A2"])
    assert headers.get("x-admission-token"), headers  # the room's token went with the hold
    await expect(seat(first, "A2")).to_have_attribute("data-mine", "true")
    await expect(first.locator("#countdown")).not_to_have_text("--:--")
    await first.screenshot(path=str(screenshots / "waiting-room-admitted-held.png"), full_page=True)
    await pay(first)
    await expect(first.locator("#result")).to_have_text("Booked: A1, A2. Your tickets are on their way by e-mail.",
                                                        timeout=BOOKING_TIMEOUT_MS)

    # Ana's turn ended with her payment: Ben is let in by the room, his page moves on by itself.
    await expect(second.locator("body")).to_have_attribute("data-stage", "map", timeout=ADMITTED_TIMEOUT_MS)
    await on_the_map(second, ben)
    await expect(third.locator("#queue-position")).to_have_text("1", timeout=ADMITTED_TIMEOUT_MS)
    for code in ("A1", "A2"):
        await expect(seat(second, code)).to_have_attribute("data-status", "BOOKED")
    await hold(second, ["A3", "A4"])
    await expect(seat(second, "A4")).to_have_attribute("data-mine", "true")
    await second.screenshot(path=str(screenshots / "waiting-room-second-held.png"), full_page=True)
    await pay(second)
    await expect(second.locator("#result")).to_have_text("Booked: A3, A4. Your tickets are on their way by e-mail.",
                                                         timeout=BOOKING_TIMEOUT_MS)

    # Every seat booked: the room says sold out to whoever still waits.
    await expect(third.locator("body")).to_have_attribute("data-stage", "sold-out", timeout=ADMITTED_TIMEOUT_MS)
    await expect(third.locator("#sold-out")).to_contain_text("Sold out")
    await third.screenshot(path=str(screenshots / "waiting-room-sold-out.png"), full_page=True)
    assert (screenshots / "waiting-room-queued.png").stat().st_size > 10_000


async def test_a_room_that_opens_itself_while_the_customer_chooses_sends_him_to_the_queue(browser, page_stack,
                                                                                        screenshots) -> None:
    """Dan is on the map of a showtime whose room is automatic and off (no queue). While he chooses, two more
    customers come to the page: three new in the minute, the room's threshold, and it opens itself. Dan's hold is
    answered 403 ADMISSION_REQUIRED: his page takes him to the queue by itself, the room lets him in (he is
    alone in it) and his hold, now with the room's token, is taken."""
    sid = await new_showtime(page_stack, {"A": 4}, title=FILM)
    url = f"{page_stack.hold_url}/admin/showtimes/{sid}/waiting-room"
    async with httpx.AsyncClient() as client:
        r = await client.put(url, headers=admin(page_stack), json={
            "mode": "auto", "activeLimit": 1, "openAtArrivalsPerMinute": 3, "openAtActive": 1000})
        assert r.status_code == 200 and r.json()["enabled"] is False, r.text
        dan = random.randint(10**6, 10**9)
        page = await signed_in(browser, page_stack, sid, dan)
        await on_the_map(page, dan)  # no room on: straight to the map (his look counted: one arrival)
        for other in (random.randint(10**6, 10**9) for _ in range(2)):  # two more customers come to the page
            token = issue_token(page_stack.jwt_secret, sub=str(other), role="customer")
            await client.get(f"{page_stack.hold_url}/showtimes/{sid}/waiting-room",
                             headers={"Authorization": f"Bearer {token}"})
        room = (await client.get(url, headers=admin(page_stack))).json()
        assert (room["enabled"], room["mode"], room["changedReason"]) == (True, "auto", "ARRIVALS"), room
    await seat(page, "A1").click()
    async with page.expect_response(lambda r: r.url.endswith("/holds") and r.request.method == "POST") as refused:
        await page.click("#hold")
    assert (await refused.value).status == 403
    await expect(page.locator("#message")).to_contain_text("It is your turn", timeout=ADMITTED_TIMEOUT_MS)
    await page.screenshot(path=str(screenshots / "waiting-room-opened-itself.png"), full_page=True)
    if await page.locator("#picked").text_content() != "Picked: A1":
        await seat(page, "A1").click()
    async with page.expect_response(lambda r: r.url.endswith("/holds") and r.request.method == "POST") as held:
        await page.click("#hold")
    response = await held.value
    assert response.status == 201, await response.text()
    assert (await response.request.all_headers()).get("x-admission-token")  # the room's token went with it
    await expect(seat(page, "A1")).to_have_attribute("data-mine", "true")


def _estimate():  # type: ignore[no-untyped-def]
    import re

    return re.compile(r"^about [0-9]+ (s|min)$")
