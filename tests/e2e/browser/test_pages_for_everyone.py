"""The pages for everyone, in a real browser (Debian's chromium, Playwright) against the real stack: axe-core finds
no serious or critical violation on any page in any state (what's on, the seat map signed out, picking, with a
hold, back from checkout, the waiting room, my bookings, the door, the operator's page); a customer books a seat
with the keyboard alone (Tab, the arrow keys, Space, Enter), seeing where the focus is, each seat telling its
state and category in words; the live region says the hold, its coming expiry and the room's admission. The
customers sign in as the other page tests do (a dev token pasted). axe's figures per page go to
var/log/tests/browser/axe.jsonl."""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, expect
from ticketing.auth import issue_token

from .axe import assert_accessible
from .pages import BOOKING_TIMEOUT_MS, admin, booked, hold, new_showtime, on_the_map, pay, seat, signed_in, staff

pytestmark = pytest.mark.e2e

LAYOUT = [{"row": "A", "blocks": [{"from": 1, "to": 4, "category": "VIP"}]},
          {"row": "B", "blocks": [{"from": 1, "to": 2, "category": "ACCESSIBLE"}, {"gap": 2}, {"from": 3, "to": 6}]}]
PRICES = {"STANDARD": {"ADULT": 1200, "CHILD": 800}, "VIP": {"ADULT": 1800}, "ACCESSIBLE": {"ADULT": 1200}}


async def categorised_showtime(stack: Any, minutes: int = 45, currency: str = "EUR") -> tuple[int, int]:
    """A showtime with VIP, wheelchair and standard seats starting in `minutes` (inside the door's window, on
    sale), priced in `currency`, and the what's-on day (0 = today, UTC) it is listed under."""
    sid = random.randint(10**9, 2**52)
    starts = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=minutes)
    async with httpx.AsyncClient() as client:
        r = await client.post(f"{stack.hold_url}/admin/showtimes", headers=admin(stack), json={
            "showtimeId": sid, "title": "Dune: Part Three", "startsAt": starts.isoformat(), "durationMinutes": 166,
            "cinema": f"Cinema {sid % 10**6}", "hall": "Sala 3", "timeZone": "UTC", "layout": LAYOUT,
            "prices": PRICES, "currency": currency})
    assert r.status_code == 201, r.text
    return sid, (starts.date() - datetime.now(UTC).date()).days


async def tab_to(page: Page, selector: str, presses: int = 40) -> None:
    """Tab (only) until the element the selector names has the focus."""
    target = page.locator(selector)
    for _ in range(presses):
        if await target.evaluate("e => e === document.activeElement"):
            return
        await page.keyboard.press("Tab")
    raise AssertionError(f"{selector} never took the focus")


async def focused(page: Page) -> dict[str, Any]:
    return dict(await page.evaluate("""() => { const e = document.activeElement, s = getComputedStyle(e);
      return { code: e.dataset.code || null, id: e.id, label: e.getAttribute("aria-label"),
               pressed: e.getAttribute("aria-pressed"), outline: s.outlineStyle,
               width: parseFloat(s.outlineWidth) }; }"""))


async def test_every_page_and_state_has_no_serious_or_critical_accessibility_violation(browser, page_stack) -> None:
    sid, day = await categorised_showtime(page_stack)
    customer = random.randint(10**6, 10**9)
    page = await signed_in(browser, page_stack, sid, customer)
    await on_the_map(page, customer)
    # its cinema's programme: a test database may hold more showtimes today than one answer lists
    await page.goto(f"{page_stack.hold_url}/pages/?day={day}&cinema=Cinema {sid % 10**6}")
    await expect(page.locator(f'#showtimes [data-showtime="{sid}"]')).to_be_visible()
    await assert_accessible(page, "whats-on")

    signed_out = await (await browser.new_context()).new_page()
    await signed_out.goto(f"{page_stack.hold_url}/pages/showtimes/{sid}")
    await expect(signed_out.locator("#token-box")).to_be_visible()
    await expect(signed_out.locator("#title")).to_have_text("Dune: Part Three")
    await assert_accessible(signed_out, "seat-map-signed-out")

    await page.goto(f"{page_stack.hold_url}/pages/showtimes/{sid}")
    await on_the_map(page, customer)
    await assert_accessible(page, "seat-map")
    await seat(page, "B4").click()
    await seat(page, "A2").click()
    await assert_accessible(page, "seat-map-picked")
    await page.click("#hold")
    await expect(seat(page, "A2")).to_have_attribute("data-mine", "true")
    await assert_accessible(page, "seat-map-with-hold")
    await pay(page)
    await expect(page.locator("#result")).to_contain_text("Booked", timeout=BOOKING_TIMEOUT_MS)
    await assert_accessible(page, "checkout-return")
    await page.goto(f"{page_stack.hold_url}/pages/bookings")
    await expect(page.locator("#bookings .qr svg")).to_be_visible()
    await assert_accessible(page, "my-bookings")

    ticket = (await booked(page_stack, sid, ["B5"]))["ticket"]
    door = await (await browser.new_context()).new_page()
    await door.goto(f"{page_stack.hold_url}/pages/door?showtime={sid}&door=A")
    await door.fill("#token", staff(page_stack))
    await door.click("#save-token")
    await expect(door.locator("#showtime")).to_have_value(str(sid))
    await assert_accessible(door, "door")
    await door.fill("#scan", ticket)
    await door.press("#scan", "Enter")
    await expect(door.locator("#answer")).to_have_attribute("data-outcome", "admitted")
    await assert_accessible(door, "door-admitted")
    await door.fill("#scan", ticket)
    await door.press("#scan", "Enter")
    await expect(door.locator("#answer")).to_have_attribute("data-outcome", "refused")
    await assert_accessible(door, "door-refused")

    operator = await (await browser.new_context()).new_page()
    await operator.goto(f"{page_stack.hold_url}/pages/showtimes/{sid}/operator")
    await operator.fill("#token", admin(page_stack)["Authorization"].removeprefix("Bearer "))
    await operator.click("#save-token")
    await expect(operator.locator("#checked-in")).to_have_text("1 of 2 bookings (1 of 3 seats)", timeout=10_000)
    await assert_accessible(operator, "operator")


async def test_the_waiting_room_is_accessible_and_says_when_the_customer_is_let_in(browser, page_stack) -> None:
    sid = await new_showtime(page_stack, {"A": 4}, title="Queue")
    async with httpx.AsyncClient() as client:
        r = await client.put(f"{page_stack.hold_url}/admin/showtimes/{sid}/waiting-room", headers=admin(page_stack),
                             json={"enabled": True, "activeLimit": 1})
    assert r.status_code == 200, r.text
    first_customer, second_customer = random.randint(10**6, 10**9), random.randint(10**6, 10**9)
    first = await signed_in(browser, page_stack, sid, first_customer)
    await on_the_map(first, first_customer)
    second = await signed_in(browser, page_stack, sid, second_customer)
    await expect(second.locator("#waiting-room")).to_be_visible()
    await expect(second.locator("#queue-position")).to_have_text("1")
    await assert_accessible(second, "waiting-room")
    message = second.locator("#message")
    await expect(message).to_have_attribute("role", "status")  # a polite live region, shown in the queue too
    await expect(message).to_be_attached()
    await hold(first, ["A1"])
    await pay(first)  # the first customer's turn ends with his booking: the second is let in
    await expect(message).to_contain_text("It is your turn: choose your seats and hold them before",
                                          timeout=90_000)
    await expect(message).to_be_visible()


async def test_a_customer_books_a_seat_with_the_keyboard_alone(browser, page_stack, screenshots) -> None:
    sid, _ = await categorised_showtime(page_stack)
    customer = random.randint(10**6, 10**9)
    page = await signed_in(browser, page_stack, sid, customer)  # the dev token, pasted as the other tests do
    await on_the_map(page, customer)
    await expect(seat(page, "A1")).to_have_attribute("aria-label", "A1, VIP, available")
    await expect(seat(page, "B1")).to_have_attribute("aria-label", "B1, Wheelchair space, available")
    await expect(page.locator("#map button.seat[tabindex='0']")).to_have_count(1)  # the map is one tab stop

    await page.locator("body").focus()
    await tab_to(page, "#map button.seat[tabindex='0']")
    now = await focused(page)
    assert now["code"] == "A1" and now["outline"] != "none" and now["width"] >= 2, now  # the focus is visible
    for key in ("ArrowRight", "ArrowDown", "ArrowRight", "ArrowRight", "ArrowLeft"):
        await page.keyboard.press(key)
    now = await focused(page)
    assert now["code"] == "B3", now  # A1 -> A2 -> B2 below it -> B3 across the gap -> B4 -> back to B3
    await page.keyboard.press("ArrowRight")
    await page.keyboard.press("Space")
    now = await focused(page)
    assert now["pressed"] == "true" and now["label"] == "B4, Standard, available", now
    await expect(page.locator("#picked")).to_have_text("Picked: B4")
    await page.screenshot(path=str(screenshots / "keyboard-picked.png"), full_page=True)

    await tab_to(page, '#ticket-types select[data-seat="B4"]')
    await page.keyboard.press("ArrowDown")  # a child's ticket, chosen with the keyboard
    await expect(page.locator('#ticket-types select[data-seat="B4"]')).to_have_value("CHILD")
    await tab_to(page, "#hold")
    async with page.expect_response(lambda r: r.url.endswith("/holds") and r.request.method == "POST") as held:
        await page.keyboard.press("Enter")
    assert (await held.value).status == 201
    await expect(page.locator("#message")).to_have_text(
        "Held for you: B4. Pay within 10 min or the seats go back on sale.")
    await expect(seat(page, "B4")).to_have_attribute("aria-label", "B4, Standard, held for you")

    await tab_to(page, "#checkout")
    async with page.expect_popup() as popup:
        await page.keyboard.press("Enter")
    gateway = await popup.value
    await gateway.wait_for_load_state()
    await tab_to(gateway, "button[value=pay]")
    await gateway.keyboard.press("Enter")
    await expect(gateway.locator("h1")).to_have_text("Payment paid")
    await expect(page.locator("#result")).to_have_text("Booked: B4. Your tickets are on their way by e-mail.",
                                                       timeout=BOOKING_TIMEOUT_MS)
    await expect(page.locator("#result")).to_have_attribute("role", "status")


async def test_the_live_region_warns_before_the_hold_expires_and_says_when_it_has(browser, page_stack) -> None:
    sid = await new_showtime(page_stack, {"A": 4}, title="Expiry")
    context = await browser.new_context()
    page = await context.new_page()
    await page.clock.install()  # the page's clock, moved on by the test: a hold lasts ten minutes
    await page.goto(f"{page_stack.hold_url}/pages/showtimes/{sid}")
    customer = random.randint(10**6, 10**9)
    await page.fill("#token", issue_token(page_stack.jwt_secret, sub=str(customer), role="customer"))
    await page.click("#save-token")
    await on_the_map(page, customer)
    await hold(page, ["A2"])
    message = page.locator("#message")
    await expect(message).to_contain_text("Held for you: A2.")
    # The page's clock flows by its own timers, which a busy machine slows: it can fall a second or two behind the
    # server's between the hold and a warning, so a warning says a second or two more than the test's arithmetic.
    await page.clock.fast_forward("09:15")
    await expect(message).to_have_text(re.compile(r"^Your hold expires in [45][0-9] s\.$"))  # a minute's warning
    await page.clock.fast_forward("00:37")
    await expect(message).to_have_text(re.compile(r"^Your hold expires in (10|[1-9]) s\.$"))  # and ten seconds'
    await page.clock.fast_forward("00:12")
    await expect(message).to_have_text("Your hold expired: the seats are free again for everyone.")
