"""What every request and response of a service passes first: the size of the request's head, and nosniff.

`Boundary` wraps the whole application, Starlette's ServerErrorMiddleware included (build_app), so that
- every response carries `X-Content-Type-Options: nosniff`: errors, 304s, the seat-map stream, and the
  500/503 answers ServerErrorMiddleware itself sends;
- a request whose request line and headers are over MAX_HEADER_BYTES gets 431 HEADERS_TOO_LARGE in the
  contract's format, with `Connection: close`, and the app is never called.
The server `ticketing-run` starts refuses such a head sooner, while reading it (ticketing.api.server), so
its headers are never parsed or held whole; this middleware is the same rule under any other server
(another uvicorn protocol, an in-process test client) and the answer both give.
"""

from __future__ import annotations

from prometheus_client import Counter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ticketing.api.errors import ApiError

NOSNIFF = (b"x-content-type-options", b"nosniff")
REFUSED_HEADS = Counter("ticketing_http_headers_too_large_total", "Requests refused with 431: request line and headers "
                        "over MAX_HEADER_BYTES")


def head_too_large_body(max_bytes: int) -> bytes:
    return ApiError(431, "HEADERS_TOO_LARGE",
                    f"the request line and headers are over the limit of {max_bytes} bytes").content()


def head_size(scope: Scope) -> int:
    """The bytes of the request line and headers as they came (near enough: separators counted as 4)."""
    headers = scope["headers"]
    return (sum(len(name) + len(value) for name, value in headers) + 4 * len(headers)
            + len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"") + 16)


class Boundary:
    def __init__(self, app: ASGIApp, max_header_bytes: int) -> None:
        self.app, self.max_header_bytes = app, max_header_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if head_size(scope) > self.max_header_bytes:
            REFUSED_HEADS.inc()
            await _refuse(self.max_header_bytes, send)
            return

        async def nosniff(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), NOSNIFF]
            await send(message)

        await self.app(scope, receive, nosniff)


async def _refuse(max_bytes: int, send: Send) -> None:
    body = head_too_large_body(max_bytes)
    await send({"type": "http.response.start", "status": 431,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)),
                            (b"connection", b"close"), NOSNIFF]})
    await send({"type": "http.response.body", "body": body})
