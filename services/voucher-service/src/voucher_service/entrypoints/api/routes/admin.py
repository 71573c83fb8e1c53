"""Admin: create a voucher, read its counters (Postgres and the flash gate side by side)."""

from __future__ import annotations

from fastapi import APIRouter
from ticketing.api.security import Admin

from voucher_service.domain import commands
from voucher_service.domain.errors import VoucherError
from voucher_service.entrypoints.api.deps import DepsDep, VoucherCode
from voucher_service.entrypoints.api.errors import to_api_error
from voucher_service.entrypoints.api.schemas import VoucherCreate, VoucherPublic
from voucher_service.service_layer import handlers

router = APIRouter(tags=["admin"])


@router.post("/admin/vouchers", status_code=201, name="create_voucher")
async def create(body: VoucherCreate, _: Admin, deps: DepsDep) -> dict[str, str]:
    cmd = commands.CreateVoucher(body.code, body.discountAmount, body.minOrderAmount, body.totalLimit,
                                 body.perUserLimit, body.startsAt, body.endsAt, body.flashSale)
    try:
        await handlers.create_voucher(cmd, deps)
    except VoucherError as exc:
        raise to_api_error(exc) from exc
    return {"code": body.code}


@router.get("/admin/vouchers/{code}", response_model=VoucherPublic, name="get_voucher")
async def read(code: VoucherCode, _: Admin, deps: DepsDep) -> VoucherPublic:
    try:
        found = await handlers.read_voucher(commands.ReadVoucher(code), deps)
    except VoucherError as exc:
        raise to_api_error(exc) from exc
    return VoucherPublic(code=code, totalLimit=found.voucher.total_limit, usedCount=found.voucher.used_count,
                         reserved=found.reserved, confirmed=found.confirmed, released=found.released,
                         gateRemaining=found.gate_remaining)
