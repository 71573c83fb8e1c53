"""Webhook delivery in background tasks, as Stripe delivers events: signed (Stripe-Signature) at each send,
retried with exponential backoff on non-2xx, to the one endpoint the merchant registered (SIM_WEBHOOK_URL).

Modes: `normal` (once, retried until 2xx), `duplicate` (the same event id delivered twice), `delayed`
(wait `delaySeconds` first), `never` (nothing is sent: the merchant must reconcile), `out_of_order` (held back
until the session's next event has been delivered, e.g. the refund or the expiry that followed it, or until
`delaySeconds`, OUT_OF_ORDER_WAIT when 0: Stripe does not promise to deliver events in the order they happened).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import orjson
from tenacity import AsyncRetrying, RetryCallState, retry_if_result, stop_after_attempt
from ticketing import http_pool
from ticketing.logs import log_action
from ticketing.retries import backoff

from gateway_simulator.config import SimulatorSettings
from gateway_simulator.model import Session
from gateway_simulator.signing import signature_header

logger = logging.getLogger(__name__)

Delivery = Literal["normal", "duplicate", "delayed", "never", "out_of_order"]
API_VERSION = "2025-09-30.clover"
OUT_OF_ORDER_WAIT = 30.0  # seconds an out-of-order event waits for the session's next one at most


@dataclass
class Attempt:
    event_id: str
    status: int | None  # None = connection error
    at: float
    type: str = ""


def stripe_event(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"evt_{secrets.token_hex(12)}", "object": "event", "api_version": API_VERSION,
            "created": int(time.time()), "livemode": False, "pending_webhooks": 1, "type": kind,
            "request": {"id": None, "idempotency_key": None}, "data": {"object": obj}}


@dataclass
class Deliverer:
    settings: SimulatorSettings
    attempts: dict[str, list[Attempt]] = field(default_factory=dict)  # session id -> attempts
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _delivered: dict[str, asyncio.Event] = field(default_factory=dict)  # session id -> one of its events delivered
    _client: httpx.AsyncClient | None = None

    def schedule(self, session: Session, kind: str, obj: dict[str, Any], delivery: Delivery, delay: float) -> str:
        """Send an event of this type about this object; returns its id."""
        event = stripe_event(kind, obj)
        if delivery == "never":
            log_action(logger, "sim.delivery_suppressed", session_id=session.session_id, event_id=event["id"])
            return str(event["id"])
        if delivery == "out_of_order":
            later = self._delivered.setdefault(session.session_id, asyncio.Event())
            later.clear()
            work = self._deliver_after(session, event, later, delay or OUT_OF_ORDER_WAIT)
        else:
            work = self._deliver(session, event, 2 if delivery == "duplicate" else 1,
                                 delay if delivery == "delayed" else 0.0)
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return str(event["id"])

    async def _deliver(self, session: Session, event: dict[str, Any], copies: int, wait: float) -> None:
        await asyncio.sleep(wait)
        body = orjson.dumps(event)
        for _ in range(copies):
            await self._until_accepted(session, event, body)
        if (later := self._delivered.get(session.session_id)) is not None:
            later.set()  # an out-of-order event of this session held back for this one goes now

    async def _deliver_after(self, session: Session, event: dict[str, Any], later: asyncio.Event,
                             limit: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(later.wait(), limit)
        await self._until_accepted(session, event, orjson.dumps(event))

    async def _until_accepted(self, session: Session, event: dict[str, Any], body: bytes) -> None:
        s, tries = self.settings, itertools.count(1)

        async def deliver() -> int | None:
            status = await self._post(s.sim_webhook_url, body)
            self.attempts.setdefault(session.session_id, []).append(
                Attempt(event["id"], status, time.time(), event["type"]))
            log_action(logger, "sim.delivery_attempt", session_id=session.session_id, event_id=event["id"],
                       event_type=event["type"], attempt=next(tries), status=status)
            return status

        def gave_up(_: RetryCallState) -> None:
            log_action(logger, "sim.delivery_gave_up", level=logging.WARNING, session_id=session.session_id,
                       event_id=event["id"])

        await AsyncRetrying(retry=retry_if_result(lambda status: status is None or not 200 <= status < 300),
                            stop=stop_after_attempt(s.callback_max_attempts),
                            wait=backoff(s.callback_backoff_initial, s.callback_backoff_max),
                            retry_error_callback=gave_up)(deliver)

    async def _post(self, url: str, body: bytes) -> int | None:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.settings.callback_timeout_seconds, limits=http_pool.LIMITS)
        # Signed at send time, as Stripe does: every retry carries a fresh `t`.
        headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": "Stripe/1.0 (+simulator)",
                   "Stripe-Signature": signature_header(self.settings.stripe_webhook_secret, body)}
        try:
            response = await self._client.post(url, content=body, headers=headers)
            return response.status_code
        except httpx.HTTPError:
            return None

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._client is not None:
            await self._client.aclose()
