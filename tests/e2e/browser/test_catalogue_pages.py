"""What's on -> the seat map with its categories, prices and a ticket type per seat -> hold -> pay -> my bookings
with the QR ticket -> a cancellation, in a real browser (Debian's chromium, Playwright). Screenshots go to
var/screenshots/; every wait is for a condition on the page."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from urllib.parse import quote
from zoneinfo import ZoneInfo

import httpx
import pytest
from playwright.async_api import expect
from ticketing.auth import issue_token

from .pages import BOOKING_TIMEOUT_MS, admin, on_the_map, pay, seat

pytestmark = pytest.mark.e2e

LAYOUT = [{"row": "A", "blocks": [{"from": 1, "to": 4, "category": "VIP"}]},
          {"row": "B", "blocks": [{"from": 1, "to": 2, "category": "ACCESSIBLE"}, {"gap": 2}, {"from": 3, "to": 6}]}]
PRICES = {"STANDARD": {"ADULT": 1200, "CHILD": 800}, "VIP": {"ADULT": 1800}, "ACCESSIBLE": {"ADULT": 1200}}


async def test_a_customer_finds_a_showtime_books_a_child_and_a_vip_seat_and_cancels(browser, page_stack,
                                                                                     screenshots) -> None:
    sid, customer = random.randint(10**9, 2**52), random.randint(10**6, 10**9)
    cinema = f"Cinema {sid % 10**6}"
    starts = (datetime.now(UTC) + timedelta(days=2)).replace(hour=19, minute=30, second=0, microsecond=0)
    async with httpx.AsyncClient() as client:
        r = await client.post(f"{page_stack.hold_url}/admin/showtimes", headers=admin(page_stack), json={
            "showtimeId": sid, "title": "Dune: Part Three", "startsAt": starts.isoformat(), "durationMinutes": 166,
            "cinema": cinema, "hall": "Sala 3", "timeZone": "Europe/Madrid", "layout": LAYOUT, "prices": PRICES})
    assert r.status_code == 201, r.text
    page = await (await browser.new_context(viewport={"width": 1100, "height": 760}, timezone_id="UTC")).new_page()

    await page.goto(f"{page_stack.hold_url}/pages/?day=2")
    await page.select_option("#cinema", cinema)
    listed = page.locator(f'#showtimes [data-showtime="{sid}"]')
    await expect(listed).to_have_attribute("data-status", "ON_SALE")
    await expect(listed).to_contain_text(starts.astimezone(ZoneInfo("Europe/Madrid")).strftime("%H:%M"))  # its clock
    await expect(listed).to_contain_text("10 seats left")
    await page.screenshot(path=str(screenshots / "whats-on.png"), full_page=True)
    await listed.locator("a").click()

    await expect(page).to_have_url(f"{page_stack.hold_url}/pages/showtimes/{sid}")
    await page.fill("#token", issue_token(page_stack.jwt_secret, sub=str(customer), role="customer"))
    await page.click("#save-token")
    await on_the_map(page, customer)
    await expect(seat(page, "A1")).to_have_attribute("data-category", "VIP")
    await expect(seat(page, "B1")).to_have_attribute("data-category", "ACCESSIBLE")
    assert await seat(page, "B3").evaluate("b => b.style.gridColumn") == "6"  # after the gap of two places
    await expect(page.locator('#prices li[data-category="VIP"]')).to_contain_text("Adult €18.00")
    await seat(page, "A2").click()
    await seat(page, "B4").click()
    await expect(page.locator('#ticket-types select[data-seat="A2"] option')).to_have_count(1)  # VIP: adults only
    await page.select_option('#ticket-types select[data-seat="B4"]', "CHILD")
    async with page.expect_response(lambda r: r.url.endswith("/holds") and r.request.method == "POST") as held:
        await page.click("#hold")
    hold = await (await held.value).json()
    assert hold["amountCents"] == 1800 + 800
    assert [(t["seat"], t["ticketType"]) for t in hold["tickets"]] == [("A2", "ADULT"), ("B4", "CHILD")]
    await expect(page.locator("#amount")).to_have_text("€26.00")
    await expect(seat(page, "B4")).to_have_attribute("data-mine", "true")
    await expect(page.locator("#starts-at")).to_contain_text(f"{cinema}, Sala 3")
    await page.screenshot(path=str(screenshots / "seat-map-categories.png"), full_page=True)
    await pay(page)
    await expect(page.locator("#result")).to_contain_text("Booked", timeout=BOOKING_TIMEOUT_MS)

    await page.goto(f"{page_stack.hold_url}/pages/bookings")
    booking = page.locator(f'#bookings [data-booking="{hold["bookingId"]}"]')
    await expect(booking).to_have_attribute("data-status", "BOOKED")
    await expect(booking).to_contain_text("B4 Child €8.00")
    await expect(booking.locator(".qr svg")).to_be_visible()
    await page.screenshot(path=str(screenshots / "my-bookings.png"), full_page=True)
    await booking.locator("button.cancel").click()
    await expect(booking).to_have_attribute("data-status", "CANCELLED")
    await expect(page.locator("#message")).to_contain_text("refunded in full")
    await expect(booking.locator(".qr")).to_have_count(0)
    await page.screenshot(path=str(screenshots / "my-bookings-cancelled.png"), full_page=True)

    await page.goto(f"{page_stack.hold_url}/pages/showtimes/{sid}")  # the seats are on sale again
    await expect(page.locator("body")).to_have_attribute("data-stage", "map", timeout=30_000)
    await expect(seat(page, "A2")).to_have_attribute("data-status", "AVAILABLE")


async def test_what_s_on_lists_a_day_of_more_showtimes_than_an_answer_holds_in_order(browser, page_stack) -> None:
    """The stack's answers hold 3 showtimes (CATALOGUE_PAGE_SIZE): the page reads the day page after page."""
    sid = random.randint(10**9, 2**52)
    cinema = f"Multiplex {sid % 10**6}"
    day = (datetime.now(UTC) + timedelta(days=3)).replace(hour=12, minute=0, second=0, microsecond=0)
    made = [sid + n for n in range(7)]
    async with httpx.AsyncClient() as client:
        for n, showtime in enumerate(made):  # two halls a start: each start but the last has two showtimes
            r = await client.post(f"{page_stack.hold_url}/admin/showtimes", headers=admin(page_stack), json={
                "showtimeId": showtime, "title": f"Film {n}", "cinema": cinema, "hall": str(n % 2 + 1),
                "startsAt": (day + timedelta(hours=n // 2)).isoformat(), "layout": LAYOUT, "prices": PRICES})
            assert r.status_code == 201, r.text
    page = await (await browser.new_context(timezone_id="UTC")).new_page()
    await page.goto(f"{page_stack.hold_url}/pages/?day=3&cinema={quote(cinema)}")
    await expect(page.locator("#showtimes li")).to_have_count(len(made))
    listed = await page.locator("#showtimes li").evaluate_all("items => items.map((i) => Number(i.dataset.showtime))")
    assert listed == made
