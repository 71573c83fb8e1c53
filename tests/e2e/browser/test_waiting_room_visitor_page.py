"""A visitor not signed in waits in a showtime's waiting room, in a real browser (the dev path: no provider).

A showtime of four seats whose room lets one customer choose at a time (activeLimit 1). Ana, through the API,
is let in and holds A1. A visitor opens the page with no token: he is shown his place (1) and an estimated wait,
not asked to sign in yet (the dev path's token box is there, as on every page without a token). Ana cancels her
hold, which ends her turn: the visitor's page says it is his turn and asks for his token (the dev path's box), he
pastes Ben's, his token claims the admission and the page goes on to the map, where Ben holds A2 with the room's
admission token.
"""

from __future__ import annotations

import random

import httpx
import pytest
from playwright.async_api import expect
from ticketing.auth import issue_token

from .pages import admin, hold, new_showtime, on_the_map

pytestmark = pytest.mark.e2e


async def test_a_visitor_sees_his_place_signs_in_at_his_turn_and_holds(browser, page_stack, screenshots) -> None:
    sid = await new_showtime(page_stack, {"A": 4}, title="Visitors")
    ana, ben = (random.randint(10**6, 10**9) for _ in range(2))
    as_ana = {"Authorization": f"Bearer {issue_token(page_stack.jwt_secret, sub=str(ana), role='customer')}"}
    async with httpx.AsyncClient(base_url=page_stack.hold_url) as client:
        r = await client.put(f"/admin/showtimes/{sid}/waiting-room", headers=admin(page_stack),
                             json={"enabled": True, "activeLimit": 1})
        assert r.status_code == 200, r.text
        ticket = (await client.post(f"/showtimes/{sid}/queue", headers=as_ana)).json()["ticket"]
        for _ in range(200):
            polled = (await client.get(f"/queue/{ticket}", headers=as_ana)).json()
            if polled["admitted"]:
                break
        token = polled["admissionToken"]
        assert token
        held = await client.post(f"/showtimes/{sid}/holds", json={"seats": ["A1"]},
                                 headers={**as_ana, "X-Admission-Token": token})
        assert held.status_code == 201, held.text

        context = await browser.new_context(viewport={"width": 1100, "height": 720})
        page = await context.new_page()
        await page.goto(f"{page_stack.hold_url}/pages/showtimes/{sid}")  # no token pasted
        await expect(page.locator("body")).to_have_attribute("data-stage", "queue", timeout=30_000)
        await expect(page.locator("#queue-position")).to_have_text("1")
        await expect(page.locator("#queue-wait")).not_to_have_text("-")
        await expect(page.locator("#message")).not_to_contain_text("your turn")  # not asked yet: only his place
        await page.screenshot(path=str(screenshots / "waiting-room-visitor-queued.png"), full_page=True)

        gone = await client.delete(f"/holds/{held.json()['holdId']}", headers=as_ana)
        assert gone.status_code == 204, gone.text  # her turn is over: the visitor's comes
    await expect(page.locator("#message")).to_contain_text("It is your turn: paste your token", timeout=30_000)
    await expect(page.locator("#token-box")).to_be_visible()
    await page.fill("#token", issue_token(page_stack.jwt_secret, sub=str(ben), role="customer"))
    await page.click("#save-token")
    await on_the_map(page, ben)
    await expect(page.locator("#message")).to_contain_text("It is your turn")
    headers = await hold(page, ["A2"])
    assert headers.get("x-admission-token")  # the admission his token claimed, bound to him
    await context.close()
