"""What a browser test that failed leaves behind to explain itself, taken at the moment it failed: the page's
requests that never finished (how long ago each was sent, whether its answer's headers had come), the pages'
journal (each navigation, each request finished with its status and time, failed, or answered with an error
status, scripts' uncaught errors, console errors and warnings: a script that never ran leaves a page half drawn
with nothing in flight, and the journal says whether it was fetched and how), and the
Python stacks of its stack's processes (py-spy, as `make up` reports a service that does not become ready),
and the machine's memory and pressure stall figures.
A page waiting on the network, a server whose event loop is stuck and a machine that thrashes look the same in
a screenshot; these tell them apart. The watcher also loads a page again when the browser lost a script or
stylesheet of it to the machine's network (DROPPED below), so that what a test fails on is the product's."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from collections import deque
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, BrowserContext, ConsoleMessage, Error, Page, Request, Response
from ticketing_testing import REPO_ROOT

PY_SPY = REPO_ROOT / ".venv" / "bin" / "py-spy"
# How a browser loses a request to the machine rather than to the server: Chromium drops what is in flight when
# the machine's network interfaces change (podman adding a container's, for the deployment tests that run beside
# these), and retries only once. A page whose script or stylesheet was lost that way is loaded again, as its user
# would, at most RELOADS times per page; a server that fails it is still seen (the reload fails the same way).
DROPPED = ("net::ERR_NETWORK_CHANGED", "net::ERR_INTERNET_DISCONNECTED")
PAGE_PARTS = ("script", "stylesheet")
RELOADS = 2


class WatchedBrowser:
    """The session's browser as a test sees it: every context it opens is watched (its requests in flight, its
    pages' journal) and closed after the test, so that no page of an earlier test keeps its streams open under
    later ones."""

    def __init__(self, browser: Browser) -> None:
        self._browser = browser
        self.contexts: list[BrowserContext] = []
        self.in_flight: dict[Request, list[Any]] = {}  # request -> [sent at (monotonic), status or None]
        self.journal: deque[tuple[float, str]] = deque(maxlen=150)  # (seconds into the test, what happened)
        self._started = time.time()
        self._reloads: dict[Page, int] = {}  # page -> reloads after a dropped script or stylesheet
        self._reloading: set[asyncio.Task[None]] = set()

    async def new_context(self, **options: Any) -> BrowserContext:
        context = await self._browser.new_context(**options)
        context.on("request", lambda r: self.in_flight.__setitem__(r, [time.monotonic(), None]))
        context.on("response", self._answered)
        context.on("requestfinished", self._finished)
        context.on("requestfailed", self._failed)
        context.on("requestfailed", self._reload_if_dropped)
        context.on("console", self._console)
        context.on("weberror", lambda e: self._note(f"uncaught error: {e.error}"))
        context.on("page", lambda page: page.on(
            "framenavigated", lambda frame: frame.parent_frame or self._note(f"navigated to {frame.url}")))
        self.contexts.append(context)
        return context

    def _note(self, text: str, at: float | None = None) -> None:
        """`at`: when it happened in the browser (epoch seconds); else when this process heard of it."""
        self.journal.append(((time.time() if at is None else at) - self._started, text))

    def _answered(self, response: Response) -> None:
        if (entry := self.in_flight.get(response.request)) is not None:
            entry[1] = response.status

    def _finished(self, request: Request) -> None:
        status = self.in_flight.pop(request, [None, None])[1]
        timing = request.timing  # startTime: epoch ms; responseEnd: ms after it
        self._note(f"{request.method} {request.url} ({request.resource_type}): {status}, "
                   f"{timing['responseEnd']:.0f} ms", timing["startTime"] / 1000)

    def _failed(self, request: Request) -> None:
        self.in_flight.pop(request, None)
        started = request.timing["startTime"]  # -1 when the request failed before it started
        self._note(f"{request.method} {request.url} ({request.resource_type}) failed: {request.failure}",
                   started / 1000 if started > 0 else None)

    def _reload_if_dropped(self, request: Request) -> None:
        if request.failure not in DROPPED or request.resource_type not in PAGE_PARTS:
            return
        frame = request.frame
        if frame.parent_frame is not None:
            return
        page = frame.page
        if page in self._reloads and self._reloads[page] < 0:  # a reload is under way for this drop
            return
        done = self._reloads.get(page, 0)
        if done >= RELOADS:
            return
        self._reloads[page] = -1
        self._note(f"reloading {page.url}: {request.url} was dropped ({request.failure})")
        task = asyncio.get_running_loop().create_task(self._reload(page, done + 1))
        self._reloading.add(task)
        task.add_done_callback(self._reloading.discard)

    async def _reload(self, page: Page, count: int) -> None:
        await asyncio.sleep(0.05)  # the other parts the same change dropped fail first, and are covered by it
        with contextlib.suppress(Error):  # the test closed the page or went elsewhere meanwhile
            await page.reload(wait_until="commit")  # a part the new document loses may reload it again
        self._reloads[page] = count

    def _console(self, message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            self._note(f"console {message.type}: {message.text} ({message.location.get('url', '')})")

    def unfinished(self) -> str:
        now = time.monotonic()
        lines = [f"{request.method} {request.url} ({request.resource_type}): sent {now - sent:.1f} s ago, "
                 + ("no answer yet" if status is None else f"answered {status}, body not done")
                 for request, (sent, status) in self.in_flight.items()]
        return "\n".join(lines) or "(none)"

    def journal_text(self) -> str:
        return "\n".join(f"{at:7.2f} s  {text}" for at, text in sorted(self.journal, key=lambda e: e[0])) \
            or "(nothing)"

    async def close(self) -> None:
        for task in list(self._reloading):
            task.cancel()
        for context in self.contexts:
            await context.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._browser, name)


def machine_pressure() -> str:
    """The machine's memory and the kernel's pressure stall figures (the share of time tasks waited for the CPU,
    memory or I/O over the last 10, 60 and 300 s): a page stalled while the machine thrashed says so here."""
    lines = [subprocess.run(["free", "-m"], capture_output=True, text=True).stdout.strip()]
    for resource in ("cpu", "memory", "io"):
        try:
            pressure = (Path("/proc/pressure") / resource).read_text().strip().replace("\n", "; ")
        except OSError:
            pressure = "(not available)"
        lines.append(f"{resource}: {pressure}")
    return "\n".join(lines)


def python_stacks(pids: dict[str, int]) -> str:
    """Every named process's state and CPU time (ps), and its threads' stacks (py-spy dump; it needs no help from
    the process)."""
    out = []
    for name, pid in pids.items():
        state = subprocess.run(["ps", "-o", "stat=,etime=,time=", "-p", str(pid)], capture_output=True,
                               text=True).stdout.strip()
        try:
            dump = subprocess.run([str(PY_SPY), "dump", "--pid", str(pid)], capture_output=True, text=True,
                                  timeout=20).stdout
        except (OSError, subprocess.TimeoutExpired) as error:
            dump = f"(py-spy could not read it: {error})"
        out.append(f"--- {name} (pid {pid}; state, age, CPU time: {state or 'gone'})\n{dump}")
    return "\n".join(out)
