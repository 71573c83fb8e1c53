"""Refuse a request body over `MAX_BODY_BYTES` before it is read whole: 413 `PAYLOAD_TOO_LARGE` (DESIGN.md).

A plain ASGI middleware, the outermost one build_app adds (outside HotPaths, routing, dependencies and
every endpoint; only Starlette's ServerErrorMiddleware, which reads nothing, is outside it), so no path
into the app, hot or not, can read more than the limit:
- a declared Content-Length over the limit is answered at once; the app is not called and the body is
  never read (the server discards it as it arrives, or drops the connection);
- a declared Content-Length within the limit goes straight to the app: the server frames the body by it
  (HTTP/1.1; uvicorn's parsers), so the app cannot receive more than declared. Bytes sent past it are not
  body: the server reads them as the next request and refuses them (tests/e2e/test_oversized_bodies.py);
- a body with no Content-Length (chunked), or with Transfer-Encoding whatever its Content-Length says, is
  counted as it streams: the chunk that would pass the limit is never handed to the app. Its `receive`
  raises PayloadTooLarge instead (an HTTPException 413, so an endpoint reading the body stops where it is,
  without a 500 or an error log), and the client gets this middleware's 413, whatever the app answers.
Cost on the hot path (a declared small body): one scan of the headers, about 1 us of CPU a request;
counting every body would cost about 3 us (make bench-body-limit).
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ticketing.api.errors import ApiError


class PayloadTooLarge(HTTPException):
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
        declared = _declared_length(scope["headers"])
        if declared is None:
            await _Guard(self.max_bytes, receive, send).run(self.app, scope)
        elif declared <= self.max_bytes:
            await self.app(scope, receive, send)
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


def _declared_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    """The Content-Length the server frames the body by; None when the body must be counted instead."""
    length = None
    for name, value in headers:
        if name == b"content-length":
            length = value
        elif name == b"transfer-encoding":
            return None  # chunked: any Content-Length beside it does not frame the body
    if length is None or not length.isdigit():
        return None  # no length, or one the server would refuse anyway: count
    return int(length)


async def _refuse(max_bytes: int, scope: Scope, receive: Receive, send: Send) -> None:
    # `Connection: close`: the rest of the body is not worth reading to reuse the connection.
    error = ApiError(413, "PAYLOAD_TOO_LARGE", f"the request body is over the limit of {max_bytes} bytes",
                     headers={"Connection": "close"})
    await error.response()(scope, receive, send)
