"""A voucher's terms, read through the per-process cache (terms never change after creation)."""

from __future__ import annotations

from voucher_service.domain.errors import VoucherNotFound
from voucher_service.domain.model import Voucher
from voucher_service.service_layer.ports import Deps


async def voucher_terms(code: str, deps: Deps) -> Voucher:
    cached = deps.cache.get(code)
    if cached is not None:
        return cached
    async with deps.uow() as uow:
        voucher = await uow.vouchers.get(code)
    if voucher is None:
        raise VoucherNotFound(f"voucher {code} not found")
    deps.cache.put(voucher)
    return voucher
