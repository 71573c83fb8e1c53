"""The lean client side of `make bench-seatmap`'s fan-out: thousands of Server-Sent Events streams read raw
(asyncio protocols, no HTTP library: the client shares the 2 cores with the server it measures), the versions
each receives with their arrival times, and a process' RSS and CPU read from /proc.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path


def get(path: str, etag: int | str | None = None) -> bytes:
    """A raw GET; `etag` is a seat-map version (quoted here) or an ETag header's value as sent."""
    tag = f'"{etag}"' if isinstance(etag, int) else etag
    condition = f"If-None-Match: {tag}\r\n".encode() if tag is not None else b""
    return b"GET %s HTTP/1.1\r\nHost: bench\r\n%s\r\n" % (path.encode(), condition)


class _Stream(asyncio.Protocol):
    """One SSE stream read raw: the versions it receives (`id:` lines) with their arrival times."""

    ID = re.compile(rb"^id: (\d+)$", re.MULTILINE)

    def __init__(self, fan: Fanout) -> None:
        self.fan, self.buffer, self.head_done = fan, b"", False
        self.version, self.gaps, self.heartbeats = -1, 0, 0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        self.buffer += data
        end = self.buffer.rfind(b"\n\n")
        if end < 0:
            return
        done, self.buffer = self.buffer[:end + 2], self.buffer[end + 2:]
        self.heartbeats += done.count(b": heartbeat")
        for match in self.ID.finditer(done):
            version = int(match[1])
            if self.version >= 0 and version != self.version + 1:
                self.gaps += 1
            if self.version >= 0:
                self.fan.arrivals.append((version, now))
            self.version = version
        self.fan.progress(self)


class Fanout:
    def __init__(self) -> None:
        self.streams: list[_Stream] = []
        self.arrivals: list[tuple[int, float]] = []
        self.target, self.at_target, self.reached = -1, set[int](), asyncio.Event()

    def aim(self, version: int) -> None:
        """Wait for every stream to reach `version` (-1: for nothing)."""
        self.target, self.reached = version, asyncio.Event()
        self.at_target = {id(s) for s in self.streams if version >= 0 and s.version >= version}
        if version >= 0 and len(self.at_target) == len(self.streams):
            self.reached.set()

    def progress(self, stream: _Stream) -> None:
        if self.target >= 0 and stream.version >= self.target:
            self.at_target.add(id(stream))
            if len(self.at_target) == len(self.streams):
                self.reached.set()

    async def open(self, port: int, path: str, count: int) -> None:
        loop, request = asyncio.get_running_loop(), get(path)
        for _ in range(count // 100):
            made = await asyncio.gather(*(loop.create_connection(lambda: _Stream(self), "127.0.0.1", port)
                                          for _ in range(100)))
            for transport, protocol in made:
                transport.write(request)
                self.streams.append(protocol)
        await self.until(lambda: all(s.version >= 0 for s in self.streams))

    async def until(self, check, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
        deadline = time.perf_counter() + timeout
        while not check():
            if time.perf_counter() > deadline:
                raise TimeoutError("streams did not get there")
            await asyncio.sleep(0.05)

    def keep(self, count: int) -> None:
        """Close all but `count` streams."""
        for stream in self.streams[count:]:
            if stream.transport is not None:
                stream.transport.close()
        del self.streams[count:]

    def close(self) -> None:
        self.keep(0)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
