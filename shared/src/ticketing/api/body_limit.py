"""Refuse a request body over `MAX_BODY_BYTES` before it is read whole: 413 `PAYLOAD_TOO_LARGE`.

A plain ASGI middleware, the outermost one build_app adds (outside HotPaths, routing, dependencies and
every endpoint; only Starlette's ServerErrorMiddleware, which reads nothing, is outside it), so no path
into the app, hot or not, reads more than the limit:
- a declared Content-Length over the limit is answered at once, with `Connection: close`: the app is not
  called and the server drops the connection rather than read the body;
- a chunked body (Transfer-Encoding, whatever a Content-Length beside it says) is counted as it streams:
  the chunk that would pass the limit is never handed to the app. Its `receive` raises PayloadTooLarge
  instead (an HTTPException 413: an endpoint reading the body stops where it is, without a 500 or an error
  log), and the client gets this middleware's 413 and `Connection: close`, whatever the app answers;
- a declared Content-Length within the limit goes to the app with a cheaper tripwire on `receive`: the
  server frames the body by that length (HTTP/1.1; uvicorn's parsers), bytes sent past it are read as the
  next request and refused (tests/e2e/test_oversized_bodies.py), so a body that lies about its length
  never gets past it; should a server hand over more anyway, the app gets PayloadTooLarge, which its
  handlers answer with the same 413;
- an HTTP/1.1 request with neither header has no body (RFC 9112, 6.3) and goes straight through.
Cost: the hot POSTs pay one scan of the headers and the tripwire, GETs only the scan (make bench-body-limit).
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ticketing.api.errors import ApiError


class PayloadTooLarge(HTTPException):
    """What `receive` raises past the limit; the app's HTTPException handler renders it in the contract."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, f"the request body is over the limit of {max_bytes} bytes")


class BodyLimit:
    """`app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)`, added last (outermost)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length, chunked = _framing(scope["headers"])
        if chunked or (length is None and not scope.get("http_version", "1.1").startswith("1")):
            await _Guard(self.max_bytes, receive, send).run(self.app, scope)
        elif length is None:
            await self.app(scope, receive, send)  # no body
        elif length <= self.max_bytes:
            await self.app(scope, _tripwire(receive, self.max_bytes), send)
        else:
            await _refuse(self.max_bytes, scope, receive, send)


class _Guard:
    """One request's body count, and its response held back once the limit is passed."""

    def __init__(self, max_bytes: int, receive: Receive, send: Send) -> None:
        self.max_bytes, self._receive, self._send = max_bytes, receive, send
        self.received = 0
        self.over = False
        self.started = False  # the app began its response before passing the limit: it must finish it

    async def run(self, app: ASGIApp, scope: Scope) -> None:
        try:
            await app(scope, self.receive, self.send)
        except Exception:
            if not self.over:
                raise
            # Whatever the app did with PayloadTooLarge (or made of it), the answer is the 413 below.
        if self.over and not self.started:
            await _refuse(self.max_bytes, scope, self._receive, self._send)

    async def receive(self) -> Message:
        if self.over:
            raise PayloadTooLarge(self.max_bytes)
        message = await self._receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.max_bytes:
                self.over = True
                raise PayloadTooLarge(self.max_bytes)
        return message

    async def send(self, message: Message) -> None:
        if self.over and not self.started:
            return  # held back: the client gets the middleware's 413 instead
        self.started = True
        await self._send(message)


def _framing(headers: list[tuple[bytes, bytes]]) -> tuple[int | None, bool]:
    """(the declared Content-Length, whether the body is chunked); a malformed length counts as chunked
    (the server refuses it before we are called anyway). ASGI header names are lower case."""
    fields = dict(headers)  # cheaper than a loop in Python (this runs for every request)
    if b"transfer-encoding" in fields:
        return None, True
    length = fields.get(b"content-length")
    if length is None:
        return None, False
    return (int(length), False) if length.isdigit() else (None, True)


def _tripwire(receive: Receive, max_bytes: int) -> Receive:
    left = max_bytes

    async def counted() -> Message:
        nonlocal left
        message = await receive()
        left -= len(message.get("body", b""))
        if left < 0:
            raise PayloadTooLarge(max_bytes)
        return message

    return counted


async def _refuse(max_bytes: int, scope: Scope, receive: Receive, send: Send) -> None:
    # `Connection: close`: the rest of the body is not worth reading to reuse the connection.
    error = ApiError(413, "PAYLOAD_TOO_LARGE", PayloadTooLarge(max_bytes).detail, headers={"Connection": "close"})
    await error.response()(scope, receive, send)
