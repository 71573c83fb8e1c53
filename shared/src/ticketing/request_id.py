"""The request id that follows one booking across the services: taken from `X-Request-ID` (or made) by
the HTTP middleware (ticketing.api.telemetry), written into every log line (ticketing.logs), carried into
the outbox as the `x-request-id` header of the events a request causes (ticketing.outbox), and taken back
from that header by the consumers (ticketing.inbox), whose own events carry it on."""

from __future__ import annotations

import itertools
import os
import re
from contextvars import ContextVar

HEADER = "x-request-id"
CURRENT: ContextVar[str | None] = ContextVar("request_id", default=None)
_ACCEPTABLE = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")  # a client's id is kept only if it is harmless


def _new_process() -> None:
    """New ids are this process's random 64-bit prefix and a counter (32 hex digits, as a uuid4's hex): unique
    without a uuid4 per request (a few us on every hot request); a forked child draws its own prefix."""
    global _prefix, _counter
    _prefix, _counter = os.urandom(8).hex(), itertools.count()


_prefix, _counter = "", itertools.count()
_new_process()
os.register_at_fork(after_in_child=_new_process)


def accept(offered: str | None) -> str:
    """The client's id if it is a sane token, else a new one."""
    return offered if offered and _ACCEPTABLE.match(offered) else f"{_prefix}{next(_counter):016x}"


def current() -> str | None:
    return CURRENT.get()
