"""One handler per command; normal mode is Postgres only. The transitions of a use
and what a stale event does to them: service_layer/outcomes.py."""

from __future__ import annotations

import contextlib
import logging

from prometheus_client import Counter
from ticketing.logs import log_action

from voucher_service.domain import commands
from voucher_service.domain.errors import (
    AlreadyUsed,
    GateUnavailable,
    OutOfStock,
    RedemptionConflict,
    VoucherError,
    VoucherExists,
    VoucherNotFound,
)
from voucher_service.domain.model import Redemption, Reservation, Voucher, VoucherCounters
from voucher_service.service_layer import flash, outcomes
from voucher_service.service_layer.ports import Deps
from voucher_service.service_layer.terms import voucher_terms

logger = logging.getLogger(__name__)
# Reservation answers by mode: Reserved, or the refusal (OutOfStock, AlreadyUsed, NotEligible, GateUnavailable...).
RESERVATIONS = Counter("ticketing_voucher_reservations_total", "Voucher reservation answers", ["mode", "outcome"])
ATTEMPTS = 3


async def create_voucher(cmd: commands.CreateVoucher, deps: Deps) -> None:
    async with deps.uow() as uow:
        if not await uow.vouchers.add(cmd):
            raise VoucherExists(f"voucher {cmd.code} exists already")
        await uow.commit()
    log_action(logger, "voucher.created", code=cmd.code, total_limit=cmd.total_limit, flash=cmd.flash_sale)
    if cmd.flash_sale:
        try:
            await flash.warm_up(cmd.code, deps, fresh=True)  # a new code: no message can be in flight
        except GateUnavailable as exc:  # created; the first reservation warms the gate up (NOT_LOADED)
            log_action(logger, "voucher.created_gate_cold", str(exc), level=logging.WARNING, code=cmd.code)


async def read_voucher(cmd: commands.ReadVoucher, deps: Deps) -> VoucherCounters:
    """Postgres' counters and, for a flash voucher, what the gate has left (None when Redis cannot say)."""
    async with deps.uow() as uow:
        voucher = await uow.vouchers.get(cmd.code)
        counts = await uow.vouchers.status_counts(cmd.code)
    if voucher is None:
        raise VoucherNotFound(f"voucher {cmd.code} not found")
    remaining = None
    if voucher.flash_sale:
        with contextlib.suppress(GateUnavailable):
            remaining = await deps.gate.remaining(cmd.code)
    return VoucherCounters(voucher, counts["reserved"], counts["confirmed"], counts["released"], remaining)


async def reserve_voucher(cmd: commands.ReserveVoucher, deps: Deps) -> Reservation:
    voucher = await voucher_terms(cmd.code, deps)
    mode = "flash" if voucher.flash_sale else "normal"
    try:
        voucher.check_eligible(cmd.order_amount, deps.clock())
        reservation = await (flash.reserve(cmd, voucher, deps) if voucher.flash_sale
                             else reserve_normal(cmd, voucher, deps))
    except VoucherError as exc:
        RESERVATIONS.labels(mode, type(exc).__name__).inc()
        raise
    RESERVATIONS.labels(mode, "Reserved").inc()
    return reservation


def _replay(existing: Redemption, cmd: commands.ReserveVoucher, voucher: Voucher) -> Reservation:
    if existing.is_retry_of(cmd.code, cmd.customer_id):
        return Reservation(cmd.order_id, voucher.discount_amount)
    raise AlreadyUsed(f"order {cmd.order_id} already used a voucher")


async def reserve_normal(cmd: commands.ReserveVoucher, voucher: Voucher, deps: Deps) -> Reservation:
    """One statement (sql reserve_use) takes the use and writes the redemption, or says why not; a twin that
    committed first (same order id or same slot) makes it write nothing, and it is asked again."""
    for _ in range(ATTEMPTS):
        try:
            attempt = await deps.reservations.reserve(cmd.code, cmd.customer_id, cmd.order_id, cmd.order_amount)
        except RedemptionConflict:
            continue
        if attempt.existing is not None:
            return _replay(attempt.existing, cmd, voucher)
        if attempt.outcome == "RESERVED":
            return Reservation(cmd.order_id, voucher.discount_amount)
        if attempt.outcome == "OUT_OF_STOCK":
            raise OutOfStock(f"voucher {cmd.code} has no uses left")
        break
    raise AlreadyUsed(f"customer {cmd.customer_id} used voucher {cmd.code} already")


async def confirm_reservation(cmd: commands.ConfirmReservation, deps: Deps) -> bool:
    """RESERVED -> CONFIRMED, idempotent. False when the order is unknown (consumers park the outcome).
    A released use is never resurrected: ReservationReleased, logged at ERROR."""
    for _ in range(ATTEMPTS):
        async with deps.uow() as uow:
            found = await uow.vouchers.redemption(cmd.order_id)
            if found is not None and cmd.code in (None, found.voucher_code):
                if not await uow.vouchers.confirm(cmd.order_id):
                    raise outcomes.confirm_after_release(cmd.order_id, found.voucher_code, found.cancelled)
                await uow.commit()
                return True
        if found is not None or cmd.code is None:
            return False
        voucher = await voucher_terms(cmd.code, deps)
        if not voucher.flash_sale:
            return False
        try:
            if await flash.confirm_unwritten(cmd.order_id, voucher, deps):
                return True
        except RedemptionConflict:
            continue  # the consumer wrote it meanwhile: confirm the written row
        return False
    return False


async def release_reservation(cmd: commands.ReleaseReservation, deps: Deps) -> bool:
    """RESERVED -> RELEASED and the use given back, once. False when the order is unknown. A confirmed
    use stays confirmed: ReservationConfirmed."""
    for _ in range(ATTEMPTS):
        async with deps.uow() as uow:
            found = await uow.vouchers.redemption(cmd.order_id)
            if found is None or cmd.code not in (None, found.voucher_code):
                released = None
            elif found.status == "CONFIRMED":
                raise outcomes.release_after_confirm(cmd.order_id, found.voucher_code)
            elif released := await uow.vouchers.release(cmd.order_id):
                await uow.vouchers.give_back(released)
                await uow.commit()
        if found is not None:
            if cmd.code not in (None, found.voucher_code):
                return False
            if released and (await voucher_terms(released, deps)).flash_sale:
                await flash.give_back(released, cmd.order_id, deps)
            elif released:
                deps.reservations.use_returned(released)
            return True
        if cmd.code is None or not (voucher := await voucher_terms(cmd.code, deps)).flash_sale:
            return False
        outcome = await flash.release_unwritten(cmd.order_id, voucher, deps)
        if outcome is not None:
            return outcome
        # None: the consumer wrote the row meanwhile; release the written row on the next pass.
    return False
