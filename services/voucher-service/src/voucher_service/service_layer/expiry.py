"""Reservation expiry: a RESERVED use older than the TTL is released only once its payment ended unpaid.

The voucher orderId is the paymentId, so the expiry asks payment-service (the Payments port) about each
expired use and releases it only when the payment is FAILED, EXPIRED or REFUNDED, or unknown there (the
checkout died before recording it). PENDING and SUCCEEDED stay reserved however long the events lag: a
paid use released here would be given to someone else while its payment keeps the discount. Those are
settled by their BookingConfirmed, BookingFailed or PaymentFailed; the expiry asks again after
RECHECK_SECONDS. payment-service unreachable: nothing is released this run (the next one retries).

Several instances may run this: one run at a time holds the expiry lock, and the candidate rows stay locked
(FOR UPDATE SKIP LOCKED) from the question to the commit, so a confirm cannot slip in between.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter

from ticketing.logs import log_action

from voucher_service.domain.errors import PaymentsUnavailable
from voucher_service.domain.model import may_expire
from voucher_service.service_layer import flash
from voucher_service.service_layer.ports import Deps

logger = logging.getLogger(__name__)
RECHECK_SECONDS = 60.0  # a use kept because its payment is open is asked about again after this long
CONCURRENT_QUESTIONS = 8  # GET /payments/{id} in flight at once per run
# The candidates stay locked while payment-service is asked: a slow one must not hold them (and a confirm
# of one of them) for long. Past this, the run counts payment-service as unavailable.
QUESTIONS_BUDGET_SECONDS = 10.0


async def payment_statuses(deps: Deps, order_ids: list[str]) -> dict[str, str | None]:
    """order id (= payment id) -> payment status (None: never recorded). Raises PaymentsUnavailable if
    payment-service cannot answer one of them (the others are then cancelled)."""
    if deps.payments is None:
        raise PaymentsUnavailable("no payment-service client configured")
    payments, limit = deps.payments, asyncio.Semaphore(CONCURRENT_QUESTIONS)

    async def ask(order_id: str) -> str | None:
        async with limit:
            return await payments.status(order_id)
    try:
        async with asyncio.timeout(QUESTIONS_BUDGET_SECONDS), asyncio.TaskGroup() as group:
            tasks = {order_id: group.create_task(ask(order_id)) for order_id in dict.fromkeys(order_ids)}
    except* PaymentsUnavailable as failed:
        raise failed.exceptions[0] from None
    except* TimeoutError:
        raise PaymentsUnavailable(f"no answer for every payment within {QUESTIONS_BUDGET_SECONDS} s") from None
    return {order_id: task.result() for order_id, task in tasks.items()}


async def expire_reservations(deps: Deps, batch: int = 500) -> int:
    """One run: release the expired uses whose payment ended unpaid; returns how many."""
    async with deps.uow() as uow:
        candidates = await uow.vouchers.expiry_candidates(deps.reservation_ttl_seconds, RECHECK_SECONDS, batch)
        rows = []
        if candidates:
            try:
                statuses = await payment_statuses(deps, [order_id for _, order_id in candidates])
            except PaymentsUnavailable as exc:  # rolled back: nothing released, nothing marked
                log_action(logger, "voucher.expiry_payments_unavailable", f"nothing released this run: {exc}",
                           level=logging.WARNING, candidates=len(candidates))
                return 0
            ended = {row_id for row_id, order_id in candidates if may_expire(statuses[order_id])}
            rows = await uow.vouchers.release_expired(sorted(ended))
            await uow.vouchers.mark_expiry_checked([row_id for row_id, _ in candidates if row_id not in ended])
            _log_kept(statuses)
        await uow.vouchers.purge_outcomes(2 * deps.reservation_ttl_seconds)
        await uow.commit()
    for row in rows:
        if row["flash_sale"]:
            await flash.give_back(row["voucher_code"], row["order_id"], deps)
    if rows:
        log_action(logger, "voucher.reservations_expired", count=len(rows))
    return len(rows)


def _log_kept(statuses: dict[str, str | None]) -> None:
    kept = Counter(status for status in statuses.values() if not may_expire(status))
    if kept:  # a use whose payment succeeded long ago and is still unconfirmed means a lost event upstream
        log_action(logger, "voucher.expiry_kept", "expired uses kept: their payment is open or paid",
                   **{str(status).lower(): n for status, n in kept.items()})
