"""The browser tests' own harness (diagnostics.WatchedBrowser): a page whose script the browser lost to the machine
(a network change drops what is in flight) is loaded again, as its user would; a script the server fails is not
retried for ever. A landing run once failed on a seat-map page left half drawn that way."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from playwright.async_api import Route, expect

from .diagnostics import RELOADS

PAGE = b"<!doctype html><title>t</title><body data-stage=entering><script src=/drawn.js></script></body>"
SCRIPT = b"document.body.dataset.stage = 'drawn'"


@pytest.fixture
def site() -> Iterator[tuple[str, Counter[str]]]:
    """A page and its script, and what was asked of each."""
    asked: Counter[str] = Counter()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            asked[self.path] += 1
            body, kind = (SCRIPT, "text/javascript") if self.path == "/drawn.js" else (PAGE, "text/html")
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", asked
    finally:
        server.shutdown()


async def _dropping(browser: Any, drops: int, error: str) -> Any:
    """A page whose first `drops` fetches of the script fail with the browser's `error`."""
    context = await browser.new_context()
    dropped = Counter[str]()

    async def drop(route: Route) -> None:
        if dropped["script"] < drops:
            dropped["script"] += 1
            await route.abort(error)
        else:
            await route.continue_()
    await context.route("**/drawn.js", drop)
    return await context.new_page()


async def test_a_page_whose_script_the_network_dropped_is_loaded_again(browser, site) -> None:  # type: ignore[no-untyped-def]
    url, asked = site
    page = await _dropping(browser, 1, "internetdisconnected")
    await page.goto(url)
    await expect(page.locator("body")).to_have_attribute("data-stage", "drawn")
    assert asked["/"] == 2 and asked["/drawn.js"] == 1  # the page again, the script this time
    assert any("reloading" in text for _, text in browser.journal)


async def test_a_script_that_keeps_failing_is_not_reloaded_for_ever(browser, site) -> None:  # type: ignore[no-untyped-def]
    url, asked = site
    page = await _dropping(browser, 100, "internetdisconnected")
    await page.goto(url)
    await expect(page.locator("body")).to_have_attribute("data-stage", "entering")
    # The reloads come one after another, each when its script fails; on a busy machine the last may still be on
    # its way after 0.5 s (a landing run once saw it asked for, not yet answered). Wait for them, then for no more.
    for _ in range(100):
        if asked["/"] >= 1 + RELOADS:
            break
        await page.wait_for_timeout(100)
    await page.wait_for_timeout(1000)
    assert asked["/"] == 1 + RELOADS


async def test_a_script_the_server_refused_is_not_reloaded(browser, site) -> None:  # type: ignore[no-untyped-def]
    url, asked = site
    page = await _dropping(browser, 1, "connectionrefused")
    await page.goto(url)
    await page.wait_for_timeout(500)
    await expect(page.locator("body")).to_have_attribute("data-stage", "entering")
    assert asked["/"] == 1
