"""The pages in Spanish and Vietnamese, in a real browser (Debian's chromium, Playwright): the language is the
browser's (or the page's `?locale=`, or what the sign-in passes to setLocale); every page shows its texts from the
catalogues (no English text the catalogues translate is left on it), dates and money as the locale writes them,
in the showtime's currency when the API gives one (else euros), and passes axe-core in that language too.
Screenshots of every page in both languages go to var/screenshots/*-es.png and *-vi.png."""

from __future__ import annotations

import random
from typing import Any

import httpx
import pytest
from babel.messages.pofile import read_po
from hold_service.entrypoints.api.page_catalogues import catalogue_path
from playwright.async_api import Page, expect
from ticketing.auth import issue_token

from .axe import assert_accessible
from .pages import BOOKING_TIMEOUT_MS, admin, booked, new_showtime, on_the_map, pay, seat, signed_in, staff
from .test_pages_for_everyone import categorised_showtime

pytestmark = pytest.mark.e2e

HELD = {"es": "Reservados para ti:", "vi": "Đang giữ cho bạn:"}
VIP_ADULT = {"es": "Adulto 18,00\xa0€", "vi": "Người lớn 18,00\xa0€"}


def translated(language: str) -> dict[str, str]:
    with catalogue_path(language).open("rb") as po:
        return {str(m.id): str(m.string) for m in read_po(po) if m.id}


async def speaks(page: Page, language: str, name: str, screenshots: Any) -> None:
    """The page is in `language`: its lang attribute, none of the English texts its catalogue translates (those
    without placeholders, long enough not to be part of a name), axe-core clean; and a screenshot."""
    await expect(page.locator("html")).to_have_attribute("lang", language)
    shown = await page.evaluate("document.body.innerText + ' ' + document.title")
    english = [text for text, there in translated(language).items()
               if "{" not in text and len(text) > 12 and there != text and text in shown]
    assert not english, (name, language, english)
    await assert_accessible(page, f"{name} ({language})")
    await page.screenshot(path=str(screenshots / f"{name}-{language}.png"), full_page=True)


async def queued(browser: Any, page: Page, stack: Any) -> Page:
    """`page` (its tab signed in: the token lives in the tab's sessionStorage) in the queue of a showtime whose room
    lets one in at a time, another customer in."""
    sid = await new_showtime(stack, {"A": 2}, title="Queue")
    async with httpx.AsyncClient() as client:
        r = await client.put(f"{stack.hold_url}/admin/showtimes/{sid}/waiting-room", headers=admin(stack),
                             json={"enabled": True, "activeLimit": 1})
    assert r.status_code == 200, r.text
    first = random.randint(10**6, 10**9)
    await on_the_map(await signed_in(browser, stack, sid, first), first)
    await page.goto(f"{stack.hold_url}/pages/showtimes/{sid}")
    await expect(page.locator("#queue-position")).to_have_text("1")
    return page


@pytest.mark.parametrize("language", ["es", "vi"])
async def test_every_page_speaks_the_customers_language(browser, page_stack, screenshots, language) -> None:
    sid, day = await categorised_showtime(page_stack)
    customer = random.randint(10**6, 10**9)
    context = await browser.new_context(locale=language, timezone_id="UTC", viewport={"width": 1100, "height": 760})
    page = await context.new_page()
    # its cinema's programme: a test database may hold more showtimes today than one answer lists
    await page.goto(f"{page_stack.hold_url}/pages/?day={day}&cinema=Cinema {sid % 10**6}")
    await expect(page.locator(f'#showtimes [data-showtime="{sid}"]')).to_be_visible()
    await speaks(page, language, "whats-on", screenshots)

    await page.goto(f"{page_stack.hold_url}/pages/showtimes/{sid}")
    await page.fill("#token", issue_token(page_stack.jwt_secret, sub=str(customer), role="customer"))
    await page.click("#save-token")
    await on_the_map(page, customer)
    await expect(page.locator('#prices li[data-category="VIP"]')).to_contain_text(VIP_ADULT[language])
    await seat(page, "A2").click()
    await page.click("#hold")
    await expect(page.locator("#my-hold")).to_contain_text(HELD[language])
    await speaks(page, language, "seat-map", screenshots)
    await pay(page)
    await expect(page.locator("#result")).to_have_attribute("data-outcome", "BOOKED", timeout=BOOKING_TIMEOUT_MS)
    await speaks(page, language, "checkout-return", screenshots)
    await page.goto(f"{page_stack.hold_url}/pages/bookings")
    await expect(page.locator("#bookings .qr svg")).to_be_visible()
    await speaks(page, language, "my-bookings", screenshots)

    await speaks(await queued(browser, page, page_stack), language, "waiting-room", screenshots)

    ticket = (await booked(page_stack, sid, ["B5"]))["ticket"]
    door = await context.new_page()
    await door.goto(f"{page_stack.hold_url}/pages/door?showtime={sid}&door=A")
    await door.fill("#token", staff(page_stack))
    await door.click("#save-token")
    await expect(door.locator("#showtime")).to_have_value(str(sid))  # else the scan is answered "choose it first"
    await door.fill("#scan", ticket)
    await door.press("#scan", "Enter")
    await expect(door.locator("#answer")).to_have_attribute("data-outcome", "admitted")
    await speaks(door, language, "door", screenshots)
    operator = await context.new_page()
    await operator.goto(f"{page_stack.hold_url}/pages/showtimes/{sid}/operator")
    await operator.fill("#token", admin(page_stack)["Authorization"].removeprefix("Bearer "))
    await operator.click("#save-token")
    await expect(operator.locator("#checked-in")).not_to_have_text("-", timeout=10_000)
    await speaks(operator, language, "operator", screenshots)


async def test_the_locale_comes_from_the_page_and_from_the_sign_in_and_money_from_the_showtime(browser,
                                                                                              page_stack) -> None:
    sid, _ = await categorised_showtime(page_stack, currency="USD")
    page = await (await browser.new_context(locale="en-US")).new_page()
    await page.goto(f"{page_stack.hold_url}/pages/showtimes/{sid}?locale=vi")  # the page is given a locale
    await expect(page.locator("html")).to_have_attribute("lang", "vi")
    await expect(page.locator("#token-box label")).to_have_text("Token khách hàng của bạn")
    await expect(page.locator("h1")).to_have_text("Dune: Part Three")
    await page.goto(f"{page_stack.hold_url}/pages/")  # the tab's next page keeps it
    await expect(page.locator("h1")).to_have_text("Lịch chiếu")
    await page.goto(f"{page_stack.hold_url}/pages/showtimes/{sid}")
    await expect(page.locator("html")).to_have_attribute("lang", "vi")
    await page.evaluate("setLocale('es-MX')")  # as the sign-in does with the token's `locale` claim
    await expect(page.locator("html")).to_have_attribute("lang", "es")
    await expect(page.locator("#token-box label")).to_have_text("Tu token de cliente")
    await expect(page.locator("#hold")).to_have_text("Reservar estos asientos")
    await page.evaluate("setLocale('fr')")  # a language the pages do not speak: English
    await expect(page.locator("#hold")).to_have_text("Hold these seats")
    customer = random.randint(10**6, 10**9)
    await page.fill("#token", issue_token(page_stack.jwt_secret, sub=str(customer), role="customer"))
    await page.click("#save-token")
    await on_the_map(page, customer)
    await expect(page.locator('#prices li[data-category="VIP"]')).to_contain_text("Adult $18.00")  # the showtime's
