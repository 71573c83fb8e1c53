"""ticketing.logs: JSON lines; with TRACING_ENABLED, a line written in a span names its trace and span, in hex
as OpenTelemetry writes them (a trace backend's log link finds them); nothing of the kind when off."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from ticketing import tracing
from ticketing.logs import configure_logging, log_action


@pytest.fixture
def lines(capfd: pytest.CaptureFixture[str]) -> Iterator[Any]:
    """Configures the logs as a service does (in the test: stdout is captured there), and reads what it wrote."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level

    def written() -> list[dict[str, Any]]:
        return [json.loads(line) for line in capfd.readouterr().out.splitlines()]
    yield written
    root.handlers[:] = handlers
    root.setLevel(level)


def test_on_a_line_written_in_a_span_names_its_trace_and_span(traced: tuple[Any, Any], lines: Any) -> None:
    _, provider = traced
    configure_logging("hold-service")
    log = logging.getLogger("hold_service.test")
    log_action(log, "before.span")
    with provider.get_tracer("test").start_as_current_span("hold") as span:
        log_action(log, "in.span")
    outside, inside = lines()
    assert "trace_id" not in outside and "span_id" not in outside
    ids = span.get_span_context()
    assert (inside["trace_id"], inside["span_id"]) == (f"{ids.trace_id:032x}", f"{ids.span_id:016x}")
    assert inside["action"] == "in.span" and inside["service"] == "hold-service"


def test_off_no_line_names_a_trace_even_inside_someone_elses_span(monkeypatch: pytest.MonkeyPatch,
                                                                   lines: Any) -> None:
    monkeypatch.setattr(tracing, "_tracer", None)
    configure_logging("hold-service")
    with TracerProvider().get_tracer("a library").start_as_current_span("its span"):
        log_action(logging.getLogger("hold_service.test"), "in.span")
    [line] = lines()
    assert "trace_id" not in line and "span_id" not in line
