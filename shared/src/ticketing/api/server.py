"""The HTTP/1.1 protocol `ticketing-run` gives uvicorn (`--http ticketing.api.server:HeadLimitedHttpTools`).

uvicorn's httptools protocol hands a request to the app once its whole head is parsed, and httptools keeps
each header in memory until then, whatever its size: a 1 MiB Authorization header was read, parsed and
handed over. This one counts the bytes of a request's head as they arrive and feeds the parser no more
than MAX_HEADER_BYTES of it: past that, it answers 431 HEADERS_TOO_LARGE in the contract's format and
closes the connection, the app never called. A request uvicorn cannot parse gets its 400 in the contract's
format too, and both carry nosniff (ticketing.api.boundary does the same for everything the app answers).

The limit is a class attribute that build_app sets from the service's settings: uvicorn builds the app
(--factory) before it accepts a connection. Bytes are fed in pieces of at most the limit (+1); a head that
begins in the piece where the previous request ended is counted from the next piece, so the parser may hold
up to twice the limit of such a head, never more, and the app's Boundary answers it 431 all the same.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ticketing.api.boundary import NOSNIFF, REFUSED_HEADS, head_too_large_body
from ticketing.api.errors import ApiError

LINGER_SECONDS = 5.0
# uvicorn's protocol classes are not its public API, and nothing else limits what httptools holds of a head:
# this subclass is written against these versions, and the unit tests (test_boundary) fail on any other until
# its behaviour has been checked again there and these are raised.
WRITTEN_FOR = {"uvicorn": "0.54.0", "httptools": "0.9.0"}


def _response(status: bytes, body: bytes) -> bytes:
    return b"".join([b"HTTP/1.1 ", status, b"\r\ncontent-type: application/json\r\ncontent-length: ",
                     b"%d" % len(body), b"\r\nconnection: close\r\n", NOSNIFF[0], b": ", NOSNIFF[1],
                     b"\r\n\r\n", body])


class HeadLimitedHttpTools(HttpToolsProtocol):
    max_head_bytes: ClassVar[int] = 16384

    def connection_made(self, transport) -> None:  # type: ignore[no-untyped-def]
        super().connection_made(transport)
        self._in_head, self._head_left, self._ended = True, self.max_head_bytes, False
        self._refused = False
        self._lingering: asyncio.TimerHandle | None = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._lingering is not None:
            self._lingering.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # the rest of a refused request: read and dropped (see _refuse)
        while data and self._in_head:
            piece, data = data[:self._head_left + 1], data[self._head_left + 1:]
            self._ended = False
            super().data_received(piece)
            if self.transport.is_closing():
                return
            if self._in_head and not self._ended:  # the whole piece went to the head being read
                self._head_left -= len(piece)
                if self._head_left < 0:
                    self._refuse()
                    return
        if data:
            super().data_received(data)

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head, self._head_left, self._ended = True, self.max_head_bytes, True

    def send_400_response(self, msg: str) -> None:
        self.transport.write(_response(b"400 Bad Request", ApiError(400, "BAD_REQUEST", msg).content()))
        self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._refused and self._lingering is None and not self.transport.is_closing():
            self._answer_refusal()  # the request before it (pipelined) has its answer now

    def _refuse(self) -> None:
        """Answered after the answer of a request before it on the connection, if one is still under way."""
        REFUSED_HEADS.inc()
        self._refused = True
        if self.cycle is None or self.cycle.response_complete:
            self._answer_refusal()

    def _answer_refusal(self) -> None:
        """The answer, then our side of the connection closed, while what the client still sends is read and
        dropped for LINGER_SECONDS at most: closed at once with its data unread, the connection would be
        reset and the client might lose the answer before reading it (nginx's lingering close)."""
        self.transport.write(_response(b"431 Request Header Fields Too Large",
                                       head_too_large_body(self.max_head_bytes)))
        self.transport.write_eof()
        self._lingering = self.loop.call_later(LINGER_SECONDS, self.transport.close)
