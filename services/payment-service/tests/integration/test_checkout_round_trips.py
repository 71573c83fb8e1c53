"""What one checkout waits for, counted on the real adapters: hold-service is asked once (the hold read and kept
for the payment window in one call; it was a GET, then an extension), and PostgreSQL answers a handful of
statements (issue 35; three more since the hold's lock, so that a release in that moment is not missed)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import httpx
import pytest
from payment_service.config import Settings
from payment_service.domain.commands import StartCheckout
from payment_service.service_layer.checkout import start_checkout
from payment_service.service_layer.ports import Deps

pytestmark = pytest.mark.integration


async def test_a_checkout_asks_hold_service_once_over_http(ports) -> None:
    """Both implementations: the fake, and the HTTP adapter talking to the stand-in (which counts the requests
    its fake answered)."""
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    deps = Deps(settings=settings, uow=ports.uow, statements=ports.uow, holds=ports.holds, vouchers=ports.vouchers,
                gateway=ports.gateway, clock=ports.now)
    hold = ports.hold_store.add(10**11 + uuid.uuid4().int % 10**11)
    cmd = StartCheckout(hold_id=hold.hold_id, customer_id=hold.customer_id, idempotency_key="once", voucher_code=None)
    before = ports.hold_store.calls
    payment = await start_checkout(cmd, deps)
    ports.added.append(payment.payment_id)
    assert payment.session_id is not None and ports.hold_store.calls - before == 1
    assert await start_checkout(cmd, deps) == payment and ports.hold_store.calls - before == 1  # a replay: none


def statements_sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement this process sends to PostgreSQL from now on (BEGIN and COMMIT included), but the pool's
    reset of a connection given back."""
    sent: list[str] = []
    for name in ("execute", "fetch", "fetchrow", "fetchval"):
        real = getattr(asyncpg.connection.Connection, name)

        async def counted(self: asyncpg.Connection, query: str, *args: Any, _real: Any = real, **kw: Any) -> Any:
            if "pg_advisory_unlock_all" not in query:  # the pool's reset of a returned connection, in the background
                sent.append(" ".join(query.split())[:60])
            return await _real(self, query, *args, **kw)

        monkeypatch.setattr(asyncpg.connection.Connection, name, counted)
    return sent


async def test_a_checkout_sends_ten_statements_to_postgres(payment_api, kit, monkeypatch) -> None:
    """The key claimed (1), the hold's earlier attempts read while hold-service keeps the hold (1), the PENDING
    payment written and returned by one INSERT in a transaction of its own (4: BEGIN, the hold's advisory lock,
    the INSERT, COMMIT), the session and CheckoutStarted in one transaction (BEGIN, UPDATE, the outbox row,
    COMMIT). The lock is a statement of its own, not part of the INSERT: a statement sees only what was
    committed when it began, so an INSERT that waited for the lock inside itself would miss a SeatsReleased
    mark committed meanwhile (the release closed in tests/integration/test_saga.py). Issue 35 had 7 (the INSERT
    alone, the release in that moment missed); before issue 35: 13 (a read of the key's payment, the payment's
    own transaction of five, a read at the end)."""
    customer = kit.unique_customer()
    hold = payment_api.holds.add(customer)
    sent = statements_sent(monkeypatch)
    async with httpx.AsyncClient(timeout=10) as c:
        r = await c.post(f"{payment_api.url}/holds/{hold.hold_id}/checkout", json={},
                         headers={**payment_api.token(customer), "Idempotency-Key": "seven"})
    assert r.status_code == 201, r.text
    assert len(sent) == 10, "\n".join(sent)
