"""A lean open-loop HTTP/1.1 load generator for the benchmarks.

Requests are sent at a constant arrival rate whatever the server does; latency runs from each request's
*intended* send time, so a request queued behind busy connections is counted late (no coordinated
omission). It shares the 2 cores with the server it measures, so it is built to cost little: raw
asyncio protocols over keep-alive connections, pre-built request bytes, no task or future per request
(about a fifth of the CPU of a streams-and-tasks generator at the same rate). `wrk` cannot hold an
arrival rate and wrk2 is not packaged here.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import cast

Answer = tuple[str, int]  # (status key, latency in microseconds)


class _Connection(asyncio.Protocol):
    """One keep-alive connection, one request in flight."""

    def __init__(self, generator: OpenLoop) -> None:
        self.generator = generator
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.intended = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def send(self, intended: float, request: bytes) -> None:
        assert self.transport is not None
        self.intended = intended
        self.transport.write(request)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data if self.buffer else data
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            self.buffer = buffer
            return
        head = buffer[:end].lower()
        at = head.find(b"content-length:")
        length = int(head[at + 15:].split(b"\r\n", 1)[0]) if at >= 0 else 0
        if len(buffer) < end + 4 + length:
            self.buffer = buffer
            return
        self.buffer = b""
        body = buffer[end + 4:end + 4 + length]
        self.generator.answered(self, self.generator.classify(int(buffer[9:12]), body), self.intended)

    def connection_lost(self, exc: Exception | None) -> None:
        self.generator.lost(self)


class OpenLoop:
    """Send `requests` (cycled) at `rate`/s for `seconds` over `connections` connections."""

    def __init__(self, classify: Callable[[int, bytes], str]) -> None:
        self.classify = classify
        self.answers: list[Answer] = []  # recorded after the run: a histogram insert costs more than this
        self.intended: list[float] = []  # each answer's intended send time, seconds from the start
        # how late the generator itself noticed each request was due (its loop's turn came late: it shares the
        # cores with what it measures), seconds; a wait for a free connection comes after and is not in it
        self.send_lag: list[float] = []
        self.start = 0.0
        self.cpu = self.seconds = 0.0  # the generator's own CPU (cores) and the run's length
        self.free: list[_Connection] = []
        self.backlog: deque[tuple[float, bytes]] = deque()
        self.in_flight: set[_Connection] = set()
        self.idle = asyncio.Event()

    def answered(self, connection: _Connection, key: str, intended: float) -> None:
        self.answers.append((key, int((time.perf_counter() - intended) * 1e6)))
        self.intended.append(intended - self.start)
        self._next(connection)

    def lost(self, connection: _Connection) -> None:
        if connection in self.in_flight:
            self.answers.append(("error", int((time.perf_counter() - connection.intended) * 1e6)))
            self.intended.append(connection.intended - self.start)
            self.in_flight.discard(connection)
        if connection in self.free:
            self.free.remove(connection)
        if not self.in_flight:
            self.idle.set()

    def _next(self, connection: _Connection) -> None:
        if self.backlog:
            connection.send(*self.backlog.popleft())
            return
        self.in_flight.discard(connection)
        self.free.append(connection)
        if not self.in_flight:
            self.idle.set()

    def _submit(self, intended: float, request: bytes) -> None:
        if self.free:
            connection = self.free.pop()
            self.in_flight.add(connection)
            self.idle.clear()
            connection.send(intended, request)
        else:
            self.backlog.append((intended, request))

    async def run(self, host: str, port: int | Sequence[int], connections: int, rate: float, seconds: float,
                  requests: Sequence[bytes], until: Callable[[], bool] | None = None) -> list[Answer]:
        """`until()`, checked every millisecond, ends the sending early (what was sent is still awaited). Several
        ports (one server process each): the connections are opened to them in turn."""
        loop = asyncio.get_running_loop()
        ports = [port] if isinstance(port, int) else list(port)
        for n in range(connections):
            _, protocol = await loop.create_connection(lambda: _Connection(self), host, ports[n % len(ports)])
            self.free.append(protocol)
            await asyncio.sleep(0.001)  # opened all at once, most would go to one server worker
        cpu0, start, sent = time.process_time(), time.perf_counter(), 0
        self.start = start
        # No garbage collection while it runs: each answer is a tuple kept, and a full collection over a phase's
        # hundred thousand of them stopped the generator for tens of milliseconds (counted as the servers').
        collecting = gc.isenabled()
        gc.disable()
        try:
            while (now := time.perf_counter()) - start < seconds and not (until is not None and until()):
                while (intended := start + sent / rate) <= now:
                    self.send_lag.append(now - intended)
                    self._submit(intended, requests[sent % len(requests)])
                    sent += 1
                await asyncio.sleep(0.001)
            if self.in_flight or self.backlog:
                await asyncio.wait_for(self.idle.wait(), 60)
        finally:
            if collecting:
                gc.enable()
        self.seconds = time.perf_counter() - start
        self.cpu = (time.process_time() - cpu0) / self.seconds
        for connection in self.free:
            assert connection.transport is not None
            connection.transport.close()
        return self.answers
