"""Admin: create a voucher, read its counters (Postgres and the flash gate side by side)."""

from __future__ import annotations

from fastapi import APIRouter
from ticketing.api.security import Admin

from voucher_service.domain import commands
from voucher_service.domain.errors import GateUnavailable, VoucherError, VoucherNotFound
from voucher_service.entrypoints.api.deps import Ctx, VoucherCode
from voucher_service.entrypoints.api.errors import to_api_error
from voucher_service.entrypoints.api.schemas import VoucherCreate, VoucherPublic
from voucher_service.service_layer import handlers

router = APIRouter(tags=["admin"])


@router.post("/admin/vouchers", status_code=201, name="create_voucher")
async def create(body: VoucherCreate, _: Admin, ctx: Ctx) -> dict[str, str]:
    cmd = commands.CreateVoucher(body.code, body.discountAmount, body.minOrderAmount, body.totalLimit,
                                 body.perUserLimit, body.startsAt, body.endsAt, body.flashSale)
    try:
        await handlers.create_voucher(cmd, ctx)
    except GateUnavailable:
        pass  # created in Postgres; the gate warms up on the first reservation (NOT_LOADED)
    except VoucherError as exc:
        raise to_api_error(exc) from exc
    return {"code": body.code}


@router.get("/admin/vouchers/{code}", response_model=VoucherPublic, name="get_voucher")
async def read(code: VoucherCode, _: Admin, ctx: Ctx) -> VoucherPublic:
    async with ctx.uow() as uow:
        voucher = await uow.vouchers.get(code)
        counts = await uow.vouchers.status_counts(code)
    if voucher is None:
        raise to_api_error(VoucherNotFound(f"voucher {code} not found"))
    remaining = None
    if voucher.flash_sale and ctx.gate is not None:
        try:
            remaining = await ctx.gate.remaining(code)
        except GateUnavailable:
            remaining = None
    return VoucherPublic(code=code, totalLimit=voucher.total_limit, usedCount=voucher.used_count,
                         gateRemaining=remaining, **counts)
