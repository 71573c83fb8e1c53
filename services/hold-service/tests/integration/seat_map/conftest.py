"""Seat-map tests that need real HTTP connections (streams): the app under uvicorn in the test's own event
loop, and a Server-Sent Events client that reads a stream in the background."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_asyncio
import uvicorn
from hold_service.bootstrap import Service
from hold_service.config import HoldSettings
from hold_service.entrypoints.api.app import get_application
from ticketing_testing import env, free_port

SECRET = env("JWT_SECRET", "dev-only-change-me")


@dataclass
class Served:
    url: str
    service: Service
    app: Any = None


class SseClient:
    """Reads one stream: `events` in order ({"event", "id", "data"}), `comments` counted, `ended` at its end."""

    def __init__(self, url: str) -> None:
        self.url, self.events, self.comments = url, list[dict[str, str]](), 0
        self.status: int | None = None
        self.ended = False
        self._news = asyncio.Event()
        self.task = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        try:
            async with httpx.AsyncClient(timeout=httpx.Timeout(10, read=None)) as client, \
                    client.stream("GET", self.url) as response:
                self.status = response.status_code
                fields: dict[str, str] = {}
                async for line in response.aiter_lines():
                    if not line:
                        if fields:
                            self.events.append(fields)
                        fields = {}
                    elif line.startswith(":"):
                        self.comments += 1
                    else:
                        name, _, value = line.partition(":")
                        fields[name] = value.removeprefix(" ")
                    self._news.set()
        finally:
            self.ended = True
            self._news.set()

    async def until(self, check: Callable[[SseClient], bool], timeout: float = 20.0) -> SseClient:
        """Wait for `check` to hold on what was read (woken by each line, no polling)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not check(self):
            if self.task.done() and self.task.exception():
                raise self.task.exception()  # type: ignore[misc]
            if loop.time() > deadline:
                raise AssertionError(f"stream condition not met in {timeout}s; {len(self.events)} events, "
                                     f"last {self.events[-1:]}, ended {self.ended}")
            self._news.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._news.wait(), deadline - loop.time())
        return self

    def of(self, kind: str) -> list[Any]:
        import orjson

        return [orjson.loads(e["data"]) for e in self.events if e.get("event") == kind]

    def replay(self) -> tuple[int, dict[str, str]]:
        """The first snapshot with every change after it applied, as a client does."""
        snapshot, *_ = self.of("snapshot")
        seats = {s["code"]: s["status"] for s in snapshot["seats"]}
        version = snapshot["version"]
        for change in self.of("change"):
            assert change["version"] == version + 1, f"gap or disorder: {version} then {change['version']}"
            seats.update({s["code"]: s["status"] for s in change["seats"]})
            version = change["version"]
        return version, seats

    def version(self) -> int:
        maps = self.of("snapshot") + self.of("change")
        return max((m["version"] for m in maps), default=-1)

    async def close(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.task


@pytest_asyncio.fixture
async def serve(hold_dsn: str, redis_url: str) -> AsyncIterator[Callable[..., Any]]:
    """`async with serve(seat_map_heartbeat_seconds=1) as app:` the API on a free port, `app.url`.
    `send_buffer`: the kernel's send buffer of each connection (SO_SNDBUF, inherited from the listening
    socket) instead of Linux's autotuned one of up to 4 MiB, so that a client that does not read shows soon."""
    @asynccontextmanager
    async def run(send_buffer: int | None = None, **overrides: Any) -> AsyncIterator[Served]:
        # Every test client is 127.0.0.1: the per-address limits are high unless a test sets them.
        overrides.setdefault("hold_rate_limit_per_ip_per_minute", 10**9)
        overrides.setdefault("seat_map_max_streams_per_address", 10**6)
        settings = HoldSettings(database_url=hold_dsn, redis_url=redis_url, jwt_secret=SECRET, db_pool_max=10,
                                **overrides)
        app, port = get_application(settings), free_port()
        listening = socket.socket()
        if send_buffer:
            listening.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
        listening.bind(("127.0.0.1", port))
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        task = asyncio.ensure_future(server.serve(sockets=[listening]))
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.02)
        try:
            yield Served(f"http://127.0.0.1:{port}", app.state.service, app)
        finally:
            app.state.service.seat_maps.close_streams("shutdown")  # what SIGTERM does first
            server.should_exit = True
            await task
            listening.close()
    yield run


@pytest.fixture
def sse() -> type[SseClient]:
    return SseClient
