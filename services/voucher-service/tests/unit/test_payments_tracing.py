"""HttpPayments passes the request id and, with tracing on, the current span's `traceparent` to
payment-service (whose server span is then the child of ours); with tracing off, no `traceparent`."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from ticketing import request_id, tracing
from voucher_service.adapters.payments import HttpPayments

SECRET = "payments-tracing-test-secret-0123456789"


async def sent_headers() -> httpx.Headers:
    seen: list[httpx.Request] = []

    def payment_service(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"status": "PENDING"})
    payments = HttpPayments("http://payments", jwt_secret=SECRET, timeout=1,
                            transport=httpx.MockTransport(payment_service))
    token = request_id.CURRENT.set("req-42")
    try:
        assert await payments.status(str(uuid.uuid4())) == "PENDING"
    finally:
        request_id.CURRENT.reset(token)
        await payments.close()
    return seen[0].headers


async def test_the_call_carries_the_current_span(traced: tuple[Any, Any]) -> None:
    _, provider = traced
    with provider.get_tracer("test").start_as_current_span("expiry") as span:
        headers = await sent_headers()
    context = span.get_span_context()
    assert headers["traceparent"].split("-")[1:3] == [f"{context.trace_id:032x}", f"{context.span_id:016x}"]
    assert headers["x-request-id"] == "req-42"


async def test_with_tracing_off_no_traceparent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tracing, "_tracer", None)
    headers = await sent_headers()
    assert "traceparent" not in headers and headers["x-request-id"] == "req-42"
