"""Serve the one or two endpoints that take nearly all the load without FastAPI's routing and middleware.

Under a flash sale almost every request is the same POST (a hold, a voucher reservation) answered in well
under a millisecond of I/O, so the framework's own per-request work (its middleware layers, route matching
over every route, its request/response wrapper) is a large part of its cost. `HotPaths` is a plain ASGI
middleware that matches (method, path) first and calls the endpoint with a Starlette `Request`; everything
else goes down the normal stack. A hot endpoint stays registered as a FastAPI route too, so /docs and the
OpenAPI schema still describe it, and it must be written as `async def endpoint(request) -> Response` (no
dependencies, no body model) so that both ways of reaching it behave the same. Its exceptions go to the app's
own exception handlers (the contract's error body, 503 for a dependency that is down).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

HOT_ROUTE = "route_template"  # read by ticketing.api.telemetry

Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class HotRoute:
    method: str
    path: str  # a FastAPI path template: /showtimes/{showtime_id}/holds
    endpoint: Endpoint

    def pattern(self) -> re.Pattern[str]:
        return re.compile(f"^{template_regex(self.path)}$")


def template_regex(path: str, named: bool = True) -> str:
    """A path template's regular expression: each {param} matches one path segment, as Starlette's default
    `str` convertor does (a named group with `named`)."""
    return re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)" if named else "[^/]+", re.escape(path))


class HotPaths:
    """`app.add_middleware(HotPaths, routes=[HotRoute(...)])`."""

    def __init__(self, app: ASGIApp, routes: list[HotRoute]) -> None:
        self.app = app
        self.routes = [(r.method, r.pattern(), r.endpoint, r.path) for r in routes]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for method, pattern, endpoint, template in self.routes:
                if scope["method"] == method and (match := pattern.match(scope["path"])):
                    scope["path_params"] = match.groupdict()
                    scope[HOT_ROUTE] = template  # the route label of the request's metrics
                    request = Request(scope, receive)
                    try:
                        response = await endpoint(request)
                    except Exception as exc:
                        response = await _handled(request, exc)
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)


async def _handled(request: Request, exc: Exception) -> Response:
    """The app's handler for the nearest class of `exc` (the shared ones: ApiError, Exception -> 503/500)."""
    handlers = request.app.exception_handlers
    for cls in type(exc).__mro__:
        handler = handlers.get(cls)
        if handler is not None:
            response: Response = await handler(request, exc)
            return response
    raise exc
