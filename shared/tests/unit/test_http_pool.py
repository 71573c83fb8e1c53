"""Our services' HTTP clients never send on a connection the server may be closing (ticketing.http_pool): a
server whose keep-alive ends just as a request comes closes the connection with no answer."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import httpx
import pytest
from ticketing import http_pool


@pytest.fixture
async def closing_server() -> AsyncIterator[str]:
    """Answers the first request of each connection; a later one on the same connection finds it closed, as
    when the server's keep-alive ran out at that moment."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            await writer.drain()
            await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    server.close()
    await server.wait_closed()


async def test_a_connection_idle_past_the_expiry_is_not_used_again(closing_server: str) -> None:
    async with httpx.AsyncClient(limits=http_pool.LIMITS) as client:
        assert (await client.get(closing_server)).status_code == 200
        await asyncio.sleep(http_pool.KEEPALIVE_SECONDS + 0.5)
        assert (await client.get(closing_server)).status_code == 200  # on a new connection
    async with httpx.AsyncClient() as client:  # httpx's own expiry (5 s) is uvicorn's keep-alive: it sends on it
        assert (await client.get(closing_server)).status_code == 200
        await asyncio.sleep(http_pool.KEEPALIVE_SECONDS + 0.5)
        with pytest.raises(httpx.RemoteProtocolError):
            await client.get(closing_server)


def test_the_expiry_is_under_uvicorn_s_keep_alive() -> None:
    import uvicorn

    assert http_pool.KEEPALIVE_SECONDS < uvicorn.Config(app=None).timeout_keep_alive  # type: ignore[arg-type]


class ImportWatch:
    """A finder that records every module Python searches for (it finds none: the others go on)."""

    def __init__(self) -> None:
        self.searched: list[str] = []

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        self.searched.append(name)


async def test_a_request_searches_for_no_module(closing_server: str) -> None:
    """httpcore asks which async library runs it (`import sniffio`) several times per request; with the
    package missing, every one of those was a failed import, a search of sys.path each time."""
    watch = ImportWatch()
    async with httpx.AsyncClient(limits=http_pool.LIMITS) as client:
        assert (await client.get(closing_server)).status_code == 200  # whatever a first request imports
        sys.meta_path.insert(0, watch)
        try:
            for _ in range(3):
                async with httpx.AsyncClient(limits=http_pool.LIMITS) as fresh:
                    assert (await fresh.get(closing_server)).status_code == 200
        finally:
            sys.meta_path.remove(watch)
    assert watch.searched == []
