"""A TCP proxy in front of the test PostgreSQL that cuts every connection at once, as cluster mode's HAProxy does
to the connections of a primary that is no longer one (on-marked-down shutdown-sessions) in a failover."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit, urlunsplit


class CuttingProxy:
    def __init__(self, dsn: str) -> None:
        self.target = urlsplit(dsn)
        self.links: set[asyncio.StreamWriter] = set()
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> CuttingProxy:
        self.server = await asyncio.start_server(self._link, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *_: object) -> None:
        self.cut()
        assert self.server is not None
        self.server.close()

    @property
    def dsn(self) -> str:
        """The target's DSN through the proxy."""
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        credentials = self.target.netloc.rsplit("@", 1)[0]
        return urlunsplit(self.target._replace(netloc=f"{credentials}@127.0.0.1:{port}"))

    def cut(self) -> None:
        """Every connection through the proxy reset, both ways; nothing read is delivered after it."""
        for writer in list(self.links):
            writer.transport.abort()
        self.links.clear()

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(self.target.hostname, self.target.port or 5432)
        self.links |= {writer, up_writer}
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        writer.transport.abort()
