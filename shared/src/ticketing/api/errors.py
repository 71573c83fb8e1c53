"""The contract's error format, `{"error": CODE, "message": text, ...details}`, in one place."""

from __future__ import annotations

import logging
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from ticketing.logs import log_action
from ticketing.transient import TRANSIENT_ERRORS

logger = logging.getLogger(__name__)


class ApiError(Exception):
    """An error answer; raised (the app's handler answers it) or returned as `.response()` by a route that
    answers errors often (a 409 under load)."""

    def __init__(self, status: int, code: str, message: str, *, headers: dict[str, str] | None = None,
                 **details: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers, self.details = headers, details

    def content(self) -> bytes:
        """The body, the only place it is written: `{"error": CODE, "message": text, ...details}`."""
        return orjson.dumps({"error": self.code, "message": self.message, **self.details})

    def response(self) -> Response:
        return Response(self.content(), status_code=self.status, headers=self.headers, media_type="application/json")


def not_found(what: str) -> ApiError:
    return ApiError(404, "NOT_FOUND", f"{what} not found")


def unavailable(what: str) -> ApiError:
    return ApiError(503, "UNAVAILABLE", f"{what} is unavailable, try again shortly",
                    headers={"Retry-After": "1"})


_STATUS_CODES = {401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED",
                 413: "PAYLOAD_TOO_LARGE", 422: "VALIDATION_ERROR", 429: "RATE_LIMITED"}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> Response:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> Response:
        problems = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in exc.errors()]
        return ApiError(422, "VALIDATION_ERROR", "request is not valid", problems=problems).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> Response:
        code = _STATUS_CODES.get(exc.status_code, "HTTP_ERROR")
        return ApiError(exc.status_code, code, str(exc.detail)).response()

    async def _dependency_down(request: Request, exc: Exception) -> Response:
        """A dependency down or busy: 503, never a bare 500."""
        log_action(logger, "http.dependency_down", str(exc), level=logging.WARNING,
                   path=request.url.path, error=type(exc).__name__)
        return unavailable("a dependency").response()

    # Handlers of these classes run inside the middlewares (Starlette's ExceptionMiddleware), so the metrics and
    # the access log count the 503 the client gets; a handler of Exception runs outside them all, where they have
    # already counted a 500.
    for transient in TRANSIENT_ERRORS:
        if issubclass(transient, Exception):  # every one is; the tuple is typed for `except`
            app.add_exception_handler(transient, _dependency_down)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        if isinstance(exc, TRANSIENT_ERRORS):  # raised outside the routes (a middleware): still a 503
            return await _dependency_down(request, exc)
        logger.exception("unexpected error", extra={"action": "http.unexpected", "path": request.url.path})
        return ApiError(500, "INTERNAL", "unexpected error; it has been logged").response()
