"""HttpPayments passes the request id and, with tracing on, a `traceparent` to payment-service: httpx's
instrumentation (opentelemetry-instrumentation-httpx) makes the call a CLIENT span, the child of the current
one, and sends the callee that span (whose server span is then its child); with tracing off, no `traceparent`.
The instrumentation wraps httpx's real transport, so payment-service here is a socket on the loopback."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from opentelemetry.trace import SpanKind
from ticketing import request_id, tracing
from voucher_service.adapters.payments import HttpPayments

SECRET = "payments-tracing-test-secret-0123456789"
ANSWER = b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 20\r\n\r\n{"status":"PENDING"}'


@asynccontextmanager
async def payment_service() -> AsyncIterator[tuple[str, dict[str, str]]]:
    """Its URL, and the headers of the one request it answers."""
    headers: dict[str, str] = {}

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")[1:]
        headers.update((k.strip().lower(), v.strip()) for k, _, v in (line.partition(":") for line in head if line))
        writer.write(ANSWER)
        await writer.drain()
        writer.close()
    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    async with server:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", headers


async def call(url: str) -> None:
    payments = HttpPayments(url, jwt_secret=SECRET, timeout=5)
    token = request_id.CURRENT.set("req-42")
    try:
        assert await payments.status(str(uuid.uuid4())) == "PENDING"
    finally:
        request_id.CURRENT.reset(token)
        await payments.close()


async def test_the_call_is_a_client_span_of_the_current_one_and_carries_it(traced: tuple[Any, Any]) -> None:
    exporter, provider = traced
    async with payment_service() as (url, headers):
        with provider.get_tracer("test").start_as_current_span("expiry") as span:
            await call(url)
    provider.force_flush()
    [client] = [s for s in exporter.get_finished_spans() if s.kind == SpanKind.CLIENT]
    assert client.parent.span_id == span.get_span_context().span_id  # type: ignore[union-attr]
    assert headers["traceparent"].split("-")[1:3] == [f"{client.context.trace_id:032x}",
                                                      f"{client.context.span_id:016x}"]
    assert headers["x-request-id"] == "req-42"


async def test_with_tracing_off_no_traceparent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tracing, "_tracer", None)
    async with payment_service() as (url, headers):
        await call(url)
    assert "traceparent" not in headers and headers["x-request-id"] == "req-42"
