"""Structured JSON logs; every line carries a stable `action` field."""

from __future__ import annotations

import logging
import sys
from typing import Any

from pythonjsonlogger.json import JsonFormatter

from ticketing import request_id, tracing


class _Context(logging.Filter):
    """Every line written while a request or an event it caused is handled names its request id; with
    TRACING_ENABLED, every line written in a span names its `trace_id` and `span_id` (nothing when off)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if (rid := request_id.current()) is not None:
            record.request_id = rid
        if (ids := tracing.log_ids()) is not None:
            record.trace_id, record.span_id = ids
        return True


def configure_logging(service: str, level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter(
        "%(asctime)s %(levelname)s %(name)s %(message)s",
        rename_fields={"asctime": "ts", "levelname": "level", "name": "logger"},
        static_fields={"service": service},
    ))
    handler.addFilter(_Context())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("aiokafka", "kafka", "uvicorn.access"):  # requests are logged by ticketing.api.telemetry
        logging.getLogger(noisy).setLevel(logging.WARNING)


def log_action(logger: logging.Logger, action: str, message: str = "", *,
               level: int = logging.INFO, **fields: Any) -> None:
    logger.log(level, message or action, extra={"action": action, **fields})
