"""What a browser test that failed leaves behind to explain itself, taken at the moment it failed: the page's
requests that never finished (how long ago each was sent, whether its answer's headers had come), the pages'
journal (each navigation, each request finished with its status and time, failed, or answered with an error
status, scripts' uncaught errors, console errors and warnings: a script that never ran leaves a page half drawn
with nothing in flight, and the journal says whether it was fetched and how), and the
Python stacks of its stack's processes (py-spy, as `make up` reports a service that does not become ready),
and the machine's memory and pressure stall figures.
A page waiting on the network, a server whose event loop is stuck and a machine that thrashes look the same in
a screenshot; these tell them apart."""

from __future__ import annotations

import subprocess
import time
from collections import deque
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, BrowserContext, ConsoleMessage, Request, Response
from ticketing_testing import REPO_ROOT

PY_SPY = REPO_ROOT / ".venv" / "bin" / "py-spy"


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

    async def new_context(self, **options: Any) -> BrowserContext:
        context = await self._browser.new_context(**options)
        context.on("request", lambda r: self.in_flight.__setitem__(r, [time.monotonic(), None]))
        context.on("response", self._answered)
        context.on("requestfinished", self._finished)
        context.on("requestfailed", self._failed)
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
        self._note(f"{request.method} {request.url} ({request.resource_type}) failed: {request.failure}",
                   request.timing["startTime"] / 1000)

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
