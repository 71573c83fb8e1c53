"""Best available on the seat-map page in a real browser: a count and a category beside picking; the platform
chooses the seats (the middle row's centre on an empty hall), the page shows them as the customer's hold, and
another customer's page sees them HELD. A request no run can answer says so."""

from __future__ import annotations

import random
from typing import Any

import pytest
from playwright.async_api import Page, expect

from .pages import new_showtime, on_the_map, seat, signed_in

pytestmark = pytest.mark.e2e


async def _customer_page(browser: Any, stack: Any, sid: int) -> Page:
    customer = random.randint(10**6, 10**9)
    page = await signed_in(browser, stack, sid, customer)
    await on_the_map(page, customer)
    await expect(seat(page, "B1")).to_be_visible()  # the map is drawn
    return page


async def _best(page: Page, count: int, category: str = "STANDARD") -> Any:
    await page.select_option("#best-count", str(count))
    await page.select_option("#best-category", category)
    async with page.expect_response(lambda r: r.url.endswith("/holds") and r.request.method == "POST") as held:
        await page.click("#hold-best")
    return await held.value


async def test_best_available_holds_the_middle_rows_centre(browser, page_stack, screenshots) -> None:
    sid = await new_showtime(page_stack, {"A": 8, "B": 8, "C": 8})
    first, second = await _customer_page(browser, page_stack, sid), await _customer_page(browser, page_stack, sid)
    await expect(first.locator("#best-category option")).to_have_text(["Standard"])  # its name, translated
    response = await _best(first, 2)
    assert response.status == 201, await response.text()
    await expect(first.locator("#my-seats")).to_have_text("B4, B5")
    for code in ("B4", "B5"):
        await expect(seat(first, code)).to_have_attribute("data-mine", "true")
        await expect(seat(second, code)).to_have_attribute("data-status", "HELD")
    await first.screenshot(path=str(screenshots / "seat-map-best-available.png"), full_page=True)
    assert (await _best(second, 8)).status == 201  # A and C are whole, B is not: A1-A8
    third = await _customer_page(browser, page_stack, sid)
    assert (await _best(third, 8)).status == 201  # C1-C8
    fourth = await _customer_page(browser, page_stack, sid)
    assert (await _best(fourth, 4)).status == 409  # B has 3 + 3 left
    await expect(fourth.locator("#message")).to_have_text(
        "No 4 Standard seats side by side are free: try fewer seats or another category.")
