"""The door scanner page in a real browser (Debian's chromium, Playwright), against the real stack: a ticket
admitted (green, its seats, the counter moves), the same ticket refused at another door (red, where and when it
was admitted), a forged one refused; then offline: the page checks signatures itself, admits two tickets (one of
them already admitted at another door), refuses a second scan of one, queues them, and back online sends the
queue and shows the server's conflict; a cancelled booking's ticket, one of another showtime and one shown too
early are refused with their reasons; a scanner reopened without the network (its service worker keeps the page)
still scans and syncs; a door of a chain lists its cinema's showtimes once chosen. Screenshots:
var/screenshots/door-*.png."""

from __future__ import annotations

import asyncio
import base64
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from playwright.async_api import Page, expect
from ticketing.auth import issue_token

from .pages import Link, admin, booked, open_with_token_box, soon_showtime, staff

pytestmark = pytest.mark.e2e
CATALOGUE_CACHE_SECONDS = 2.0  # hold-service's default, as the page stack runs it


async def door_page(browser: Any, stack: Any, sid: int, door: str, init_script: str = "", url: str = "") -> Page:
    """A scanner of its own (its own localStorage) at `door`, the staff token pasted, the showtime chosen; `url`:
    hold-service's address as the scanner reaches it (by default the stack's)."""
    context = await browser.new_context(viewport={"width": 1000, "height": 760}, timezone_id="UTC")
    if init_script:
        await context.add_init_script(init_script)
    page = await context.new_page()
    await open_with_token_box(page, f"{url or stack.hold_url}/pages/door?showtime={sid}&door={door}")
    await page.fill("#token", staff(stack))
    await page.click("#save-token")
    await expect(page.locator("#showtime")).to_have_value(str(sid))
    await expect(page.locator("#keys")).to_contain_text("ticket key(s) kept for offline use")
    return page


async def scan(page: Page, ticket: str) -> None:
    await page.fill("#scan", ticket)
    await page.press("#scan", "Enter")


def forged(ticket: str) -> str:
    """The ticket with its seats changed and its signature kept: what a tampered screenshot would carry."""
    raw, signature = ticket.split(".")
    payload = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    payload["seats"] = ["A1", "A2", "A3", "A4", "A5", "A6"]
    tampered = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).rstrip(b"=").decode()
    return f"{tampered}.{signature}"


async def test_a_ticket_is_admitted_once_and_refused_at_the_next_door(browser, page_stack, screenshots) -> None:
    sid = await soon_showtime(page_stack, {"A": 6})
    group, single = await booked(page_stack, sid, ["A1", "A2"]), await booked(page_stack, sid, ["A3"])
    door_a = await door_page(browser, page_stack, sid, "A")
    await expect(door_a.locator("#expected")).to_have_text("2")
    await expect(door_a.locator("#admitted")).to_have_text("0")
    await expect(door_a.locator("#expected-seats")).to_have_text("3")

    await scan(door_a, group["ticket"])
    await expect(door_a.locator("#answer")).to_have_attribute("data-outcome", "admitted")
    await expect(door_a.locator("#verdict")).to_have_text("Admitted: 2 seat(s)")
    await expect(door_a.locator("#detail")).to_have_text("A1 Adult, A2 Adult")
    await expect(door_a.locator("#admitted")).to_have_text("1")
    await expect(door_a.locator("#admitted-seats")).to_have_text("2")
    await door_a.screenshot(path=str(screenshots / "door-admitted.png"), full_page=True)

    door_b = await door_page(browser, page_stack, sid, "B")
    await expect(door_b.locator("#admitted")).to_have_text("1")  # the counter is the showtime's, not the door's
    # The scan's answer (POST), not the counter's poll (GET /showtimes/{id}/checkins) that may come between.
    async with door_b.expect_response(lambda r: r.url.endswith("/checkins")
                                      and r.request.method == "POST") as answered:
        await scan(door_b, group["ticket"])
    refused = await (await answered.value).json()
    assert (refused["error"], refused["door"]) == ("ALREADY_CHECKED_IN", "A")
    await expect(door_b.locator("#answer")).to_have_attribute("data-outcome", "refused")
    shown = datetime.fromisoformat(refused["at"].replace("Z", "+00:00")).strftime("%H:%M:%S")  # the page's clock: UTC
    await expect(door_b.locator("#detail")).to_have_text(f"Already checked in at door A at {shown}")
    await door_b.screenshot(path=str(screenshots / "door-refused.png"), full_page=True)

    await scan(door_b, forged(single["ticket"]))
    await expect(door_b.locator("#detail")).to_contain_text("Not a valid ticket")
    await scan(door_b, single["ticket"])
    await expect(door_b.locator("#verdict")).to_have_text("Admitted: 1 seat(s)")
    await expect(door_b.locator("#admitted")).to_have_text("2")
    await expect(door_a.locator("#admitted")).to_have_text("2", timeout=15_000)  # the other door's counter follows

    operator = await (await browser.new_context()).new_page()  # the operator's page: checked in against booked
    await operator.goto(f"{page_stack.hold_url}/pages/showtimes/{sid}/operator")
    await operator.fill("#token", issue_token(page_stack.jwt_secret, sub="1", role="admin"))
    await operator.click("#save-token")
    await expect(operator.locator("#checked-in")).to_have_text("2 of 2 bookings (3 of 3 seats)")
    await expect(operator.locator("#count-BOOKED")).to_have_text("3")


async def test_offline_scans_are_checked_here_queued_and_synced_with_the_conflicts(browser, page_stack,
                                                                                    screenshots) -> None:
    sid = await soon_showtime(page_stack, {"A": 6})
    elsewhere, fresh = await booked(page_stack, sid, ["A1"]), await booked(page_stack, sid, ["A2", "A3"])
    page = await door_page(browser, page_stack, sid, "C")
    await expect(page.locator("#expected")).to_have_text("2")
    async with httpx.AsyncClient() as client:  # another scanner, online, admits the first ticket at door B
        r = await client.post(f"{page_stack.hold_url}/checkins",
                              headers={"Authorization": f"Bearer {staff(page_stack, '3')}"},
                              json={"ticket": elsewhere["ticket"], "showtimeId": sid, "door": "B"})
    assert r.status_code == 200, r.text
    await expect(page.locator("#admitted")).to_have_text("1", timeout=15_000)  # the other door's admission

    await page.context.set_offline(True)
    await expect(page.locator("#network")).to_have_attribute("data-state", "offline")
    await scan(page, elsewhere["ticket"])  # this scanner cannot know: admitted here, the server decides later
    await expect(page.locator("#verdict")).to_have_text("Admitted offline: 1 seat(s)")
    await scan(page, fresh["ticket"])
    await expect(page.locator("#verdict")).to_have_text("Admitted offline: 2 seat(s)")
    await expect(page.locator("#detail")).to_contain_text("A2, A3")
    await expect(page.locator("#queued")).to_have_text("2")
    await expect(page.locator("#admitted")).to_have_text("1")  # the server's figure, as last fetched
    await expect(page.locator("#pending")).to_have_text("+ 2 admitted offline, not sent yet")
    await page.screenshot(path=str(screenshots / "door-offline-queue.png"), full_page=True)
    await scan(page, fresh["ticket"])  # the same booking again on this device: refused without the network
    await expect(page.locator("#answer")).to_have_attribute("data-outcome", "refused")
    await expect(page.locator("#detail")).to_contain_text("Already checked in at door C")
    await scan(page, forged(fresh["ticket"]))  # the signature is checked here too
    await expect(page.locator("#detail")).to_contain_text("the signature does not match")
    await expect(page.locator("#queued")).to_have_text("2")  # refusals are not queued

    await page.context.set_offline(False)
    await expect(page.locator("#sync-state")).to_have_text(
        "Sent 2 scan(s): 1 admitted, 1 refused by the server (below).", timeout=15_000)
    conflict = page.locator(f'#conflicts [data-booking="{elsewhere["bookingId"]}"]')
    await expect(conflict).to_have_attribute("data-error", "ALREADY_CHECKED_IN")
    await expect(conflict).to_contain_text("Already checked in at door B")
    await expect(page.locator("#queued")).to_have_text("0")
    await expect(page.locator("#admitted")).to_have_text("2")  # the server's count: both bookings, once each
    await expect(page.locator("#pending")).to_be_hidden()
    await page.screenshot(path=str(screenshots / "door-offline-synced.png"), full_page=True)


async def shell_kept(page: Page) -> bool:
    """Whether the page's service worker controls it and keeps the page and its scripts (door-sw.js)."""
    return bool(await page.evaluate("""async () => {
        if (!navigator.serviceWorker.controller) return false;
        const kept = await (await caches.open("ticketing-door-shell")).keys();
        return kept.length === 11;  // the page, its style sheet and its nine scripts
    }"""))


async def test_a_scanner_opened_again_without_the_network_still_scans_and_syncs(browser, page_stack) -> None:
    sid = await soon_showtime(page_stack, {"A": 2})
    ticket = (await booked(page_stack, sid, ["A1", "A2"]))["ticket"]
    link = Link(page_stack.hold_url)
    await link.mend()
    page = await door_page(browser, page_stack, sid, "E", url=link.url)
    for _ in range(100):  # the worker installs, keeps the page and takes control in the background
        if await shell_kept(page):
            break
        await page.wait_for_timeout(100)
    assert await shell_kept(page)

    await link.cut()  # the network is gone: for the page and for its service worker
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{link.url}/pages/door")
    await page.context.set_offline(True)  # and the browser knows it
    served = await page.goto(f"{link.url}/pages/door")  # the tab reopened
    assert served is not None and served.from_service_worker and served.ok
    await expect(page.locator("#network")).to_have_attribute("data-state", "offline")
    await expect(page.locator("#showtime")).to_have_value(str(sid))  # the showtime and door it kept
    await expect(page.locator("#door")).to_have_value("E")
    await scan(page, ticket)
    await expect(page.locator("#verdict")).to_have_text("Admitted offline: 2 seat(s)")
    await expect(page.locator("#queued")).to_have_text("1")

    await link.mend()
    await page.context.set_offline(False)
    await expect(page.locator("#sync-state")).to_have_text("Sent 1 scan(s): 1 admitted, 0 refused by the server.",
                                                                  timeout=15_000)
    await expect(page.locator("#admitted")).to_have_text("1")
    await page.context.close()
    await link.cut()


async def test_revoked_wrong_showtime_and_too_early_tickets_are_refused_with_their_reasons(browser,
                                                                                        page_stack) -> None:
    tonight, tomorrow = await soon_showtime(page_stack, {"A": 2}), await soon_showtime(page_stack, {"A": 4}, 24 * 60)
    customer = random.randint(10**6, 10**9)
    cancelled, early = await booked(page_stack, tomorrow, ["A1"], customer), await booked(page_stack, tomorrow, ["A2"])
    async with httpx.AsyncClient() as client:
        r = await client.post(f"{page_stack.hold_url}/bookings/{cancelled['bookingId']}/cancel", headers={
            "Authorization": f"Bearer {issue_token(page_stack.jwt_secret, sub=str(customer), role='customer')}"})
    assert r.status_code == 202, r.text

    # The page lists the showtimes GET /showtimes gives, which an API process keeps CATALOGUE_CACHE_SECONDS (2 s
    # here): an answer kept from before tonight's showtime was made (a page of the test before) is gone by then.
    await asyncio.sleep(CATALOGUE_CACHE_SECONDS + 0.5)
    page = await door_page(browser, page_stack, tomorrow, "A")
    await scan(page, cancelled["ticket"])
    await expect(page.locator("#answer")).to_have_attribute("data-outcome", "refused")
    await expect(page.locator("#detail")).to_have_text("Revoked: this booking was cancelled or refunded")
    await scan(page, early["ticket"])
    await expect(page.locator("#detail")).to_have_text("Too early: check-in for this showtime has not opened yet")
    await page.select_option("#showtime", str(tonight))
    await scan(page, early["ticket"])
    await expect(page.locator("#detail")).to_have_text("Wrong showtime: this ticket is for another showtime")
    await expect(page.locator("#admitted")).to_have_text("0")
    await expect(page.locator("#expected")).to_have_text("0")


async def test_an_answer_that_arrives_after_the_network_went_does_not_say_online(browser, page_stack) -> None:
    sid = await soon_showtime(page_stack, {"A": 2})
    page = await door_page(browser, page_stack, sid, "D")
    asked, answer = asyncio.Event(), asyncio.Event()

    async def late(route: Any) -> None:  # the counter's call, answered only after the browser went offline
        asked.set()
        await answer.wait()
        await route.fulfill(status=200, json={"showtimeId": sid, "bookings": 0, "seats": 0, "admittedBookings": 0,
                                              "admittedSeats": 0})

    await page.route("**/checkins", late)
    await page.fill("#door", "E")
    await page.dispatch_event("#door", "change")
    await asyncio.wait_for(asked.wait(), 10)
    await page.context.set_offline(True)
    await expect(page.locator("#network")).to_have_attribute("data-state", "offline")
    answer.set()
    await expect(page.locator("#expected")).to_have_text("0")  # the answer was drawn ...
    await expect(page.locator("#network")).to_have_attribute("data-state", "offline")  # ... and did not say online


async def test_a_long_offline_queue_is_sent_in_parts_and_the_earliest_scan_wins(browser, page_stack) -> None:
    sid = await soon_showtime(page_stack, {"A": 2})
    ticket = (await booked(page_stack, sid, ["A1"]))["ticket"]
    page = await door_page(browser, page_stack, sid, "D")
    batches: list[int] = []
    page.on("request", lambda r: batches.append(len(json.loads(r.post_data or "{}")["scans"]))
            if r.url.endswith("/checkins/batch") else None)
    await page.context.set_offline(True)
    await expect(page.locator("#network")).to_have_attribute("data-state", "offline")
    # Sixty scans of one ticket queued by scanners of this device over the last minutes (the earliest: door D59).
    await page.evaluate(f"""() => {{ for (let i = 0; i < 60; i++) memory.enqueue({{ ticket: {json.dumps(ticket)},
        showtimeId: {sid}, door: `D${{i}}`, at: new Date(Date.now() - 1000 * (i + 1)).toISOString(),
        bookingId: "b", seats: ["A1"] }}); }}""")
    await page.context.set_offline(False)
    await expect(page.locator("#sync-state")).to_have_text(
        "Sent 60 scan(s): 1 admitted, 59 refused by the server (below).", timeout=15_000)
    assert batches == [50, 10]
    await expect(page.locator('#conflicts [data-error="ALREADY_CHECKED_IN"]')).to_have_count(59)
    await expect(page.locator("#conflicts li").first).to_contain_text("Already checked in at door D59")
    await expect(page.locator("#admitted")).to_have_text("1")


# Linux desktop Chromium has no BarcodeDetector and the test machine no camera: both are stood in for by the
# browser's own pieces (a canvas's video stream; a detector that reads what the test holds up), so that what
# is tested is the page's use of them.
CAMERA = """
window.BarcodeDetector = class {
  static async getSupportedFormats() { return ["qr_code"]; }
  async detect() {
    window.frames_read = (window.frames_read || 0) + 1;
    return window.held_up ? [{ rawValue: window.held_up }] : [];
  }
};
navigator.mediaDevices.getUserMedia = async () => {
  const canvas = Object.assign(document.createElement("canvas"), { width: 64, height: 48 });
  canvas.getContext("2d").fillRect(0, 0, 64, 48);
  return canvas.captureStream(5);
};
"""


async def test_the_camera_reads_a_qr_once_where_the_browser_detects_barcodes(browser, page_stack) -> None:
    sid = await soon_showtime(page_stack, {"A": 2})
    ticket = (await booked(page_stack, sid, ["A1", "A2"]))["ticket"]
    page = await door_page(browser, page_stack, sid, "A", init_script=CAMERA)
    checkins: list[str] = []
    page.on("request", lambda r: checkins.append(r.url) if r.method == "POST" and r.url.endswith("/checkins") else None)
    await page.click("#camera")
    await expect(page.locator("#viewfinder")).to_be_visible()
    await expect(page.locator("#camera")).to_have_text("Stop the camera")
    await page.evaluate(f"window.held_up = {json.dumps(ticket)}")
    await expect(page.locator("#verdict")).to_have_text("Admitted: 2 seat(s)")
    read = await page.evaluate("window.frames_read")
    await page.wait_for_function("n => window.frames_read >= n", arg=read + 4)  # the QR held up for a second
    assert len(checkins) == 1  # checked once, not once per frame
    await expect(page.locator("#answer")).to_have_attribute("data-outcome", "admitted")
    await page.click("#camera")
    await expect(page.locator("#viewfinder")).to_be_hidden()


async def cinema_showtime(stack: Any, cinema: str, minutes: int) -> int:
    sid = random.randint(10**9, 2**52)
    starts = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=minutes)
    async with httpx.AsyncClient() as client:
        r = await client.post(f"{stack.hold_url}/admin/showtimes", headers=admin(stack),
                              json={"showtimeId": sid, "title": "Door", "startsAt": starts.isoformat(),
                                    "priceCents": 1250, "rows": {"A": 2}, "cinema": cinema})
    assert r.status_code == 201, r.text
    return sid


async def test_a_door_lists_the_showtimes_of_its_cinema_once_chosen(browser, page_stack) -> None:
    """The cinema asked in the address (then kept for the next visit) is the one GET /showtimes is asked for; every
    cinema lists the whole window again, the other cinema among the choices."""
    here, there = f"Door {random.randint(1, 10**9)}", f"Across the street {random.randint(1, 10**9)}"
    ours = [await cinema_showtime(page_stack, here, minutes) for minutes in (20, 40)]
    theirs = await cinema_showtime(page_stack, there, 30)
    await asyncio.sleep(CATALOGUE_CACHE_SECONDS + 0.5)  # no earlier answer of the whole window is served again
    page = await (await browser.new_context(timezone_id="UTC")).new_page()
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/showtimes?" in r.url else None)
    await open_with_token_box(page, f"{page_stack.hold_url}/pages/door?cinema={quote(here)}")
    await expect(page.locator("#cinema")).to_have_value(here)
    listed = page.locator("#showtime option")
    await expect(listed).to_have_count(3)  # "Choose the showtime" and this cinema's two, in their order
    assert await listed.evaluate_all("options => options.map((o) => o.value)") == ["", *map(str, ours)]
    assert asked and all(f"cinema={quote(here).replace('%20', '+')}" in url for url in asked), asked

    await page.select_option("#cinema", "")
    await expect(page.locator(f'#showtime option[value="{theirs}"]')).to_have_count(1)
    await expect(page.locator(f'#showtime option[value="{ours[0]}"]')).to_have_count(1)
    await page.select_option("#cinema", there)  # seen in the whole window's listing
    await expect(listed).to_have_count(2)
    await page.goto(f"{page_stack.hold_url}/pages/door")  # the next visit: the choice was kept
    await expect(page.locator("#cinema")).to_have_value(there)
    await expect(listed).to_have_count(2)
    await expect(page.locator(f'#showtime option[value="{theirs}"]')).to_have_count(1)
