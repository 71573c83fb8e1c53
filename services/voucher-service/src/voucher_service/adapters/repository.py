"""The Postgres repository and unit of work: every statement is a named query from sql/vouchers.sql."""

from __future__ import annotations

from datetime import UTC
from typing import Any

import asyncpg
from ticketing.db import Queries, sql_dir
from ticketing.unit_of_work import Conn, PostgresUnitOfWork

import voucher_service
from voucher_service.domain.commands import CreateVoucher
from voucher_service.domain.errors import OutOfStock, RedemptionConflict
from voucher_service.domain.model import Redemption, Voucher
from voucher_service.service_layer.ports import VoucherRepository, VouchersUnitOfWork

QUERIES = Queries.load(sql_dir(voucher_service.__file__) / "vouchers.sql")


def _voucher(row: asyncpg.Record) -> Voucher:
    """asyncpg reads the ends of time (a window from 0001-01-01T00:00Z, stored as -infinity; to the last
    microsecond of 9999, +infinity) as naive datetime.min/max: they are UTC like every other value."""
    values = dict(row)
    for name in ("starts_at", "ends_at"):
        if values[name].tzinfo is None:
            values[name] = values[name].replace(tzinfo=UTC)
    return Voucher(**values)


def _redemption(row: asyncpg.Record | None) -> Redemption | None:
    if row is None:
        return None
    return Redemption(row["voucher_code"], row["customer_id"], row["order_id"], row["order_amount"],
                      row["status"], row["cancelled"])


class PgVoucherRepository(VoucherRepository):
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def add(self, cmd: CreateVoucher) -> bool:
        code = await self.conn.fetchval(QUERIES.insert_voucher, cmd.code, cmd.discount_amount,
                                        cmd.min_order_amount, cmd.total_limit, cmd.per_user_limit,
                                        cmd.starts_at, cmd.ends_at, cmd.flash_sale)
        return code is not None

    async def get(self, code: str) -> Voucher | None:
        row = await self.conn.fetchrow(QUERIES.get_voucher, code)
        return _voucher(row) if row else None

    async def give_back(self, code: str, n: int = 1) -> None:
        await self.conn.execute(QUERIES.give_back_use, code, n)

    async def count_use(self, code: str) -> None:
        try:
            await self.conn.execute(QUERIES.count_increment, code)
        except asyncpg.CheckViolationError as exc:
            raise OutOfStock(f"voucher {code}: the database refused an oversell ({exc})") from exc

    async def standing(self, code: str, customer_id: int) -> tuple[int, int] | None:
        row = await self.conn.fetchrow(QUERIES.voucher_standing, code, customer_id)
        return (int(row["remaining"]), int(row["customer_uses"])) if row else None

    async def insert_redemption(self, code: str, customer_id: int, order_id: str, amount: int | None,
                                status: str = "RESERVED") -> bool:
        try:
            return await self.conn.fetchval(QUERIES.insert_redemption, code, customer_id, order_id, amount,
                                            status) is not None
        except asyncpg.UniqueViolationError as exc:
            raise RedemptionConflict(str(exc)) from exc

    async def write_reservations(self, rows: list[tuple[str, int, str, int]]) -> list[str]:
        if not rows:
            return []
        codes, customers, orders, amounts = (list(column) for column in zip(*rows, strict=True))
        try:
            found = await self.conn.fetch(QUERIES.write_reservations, codes, customers, orders, amounts)
        except asyncpg.CheckViolationError as exc:
            raise OutOfStock(f"vouchers {sorted(set(codes))}: the database refused an oversell ({exc})") from exc
        except asyncpg.UniqueViolationError as exc:
            raise RedemptionConflict(str(exc)) from exc
        return [row["result"] for row in found]

    async def insert_tombstone(self, code: str, customer_id: int, order_id: str, amount: int | None,
                               cancelled: bool = False) -> bool:
        return await self.conn.fetchval(QUERIES.insert_tombstone, code, customer_id, order_id,
                                        amount, cancelled) is not None

    async def redemption(self, order_id: str) -> Redemption | None:
        return _redemption(await self.conn.fetchrow(QUERIES.get_redemption, order_id))

    async def confirm(self, order_id: str) -> bool:
        return await self.conn.fetchrow(QUERIES.confirm_redemption, order_id) is not None

    async def release(self, order_id: str) -> str | None:
        row = await self.conn.fetchrow(QUERIES.release_redemption, order_id)
        return row["voucher_code"] if row else None

    async def cancel(self, order_id: str) -> str | None:
        code: str | None = await self.conn.fetchval(QUERIES.cancel_redemption, order_id)
        return code

    async def expiry_candidates(self, ttl_seconds: float, recheck_seconds: float,
                                batch: int) -> list[tuple[int, str]]:
        if not await self.conn.fetchval(QUERIES.try_expiry_lock):
            return []
        rows = await self.conn.fetch(QUERIES.expiry_candidates, ttl_seconds, recheck_seconds, batch)
        return [(r["id"], r["order_id"]) for r in rows]

    async def release_expired(self, ids: list[int]) -> list[dict[str, Any]]:
        return [dict(r) for r in await self.conn.fetch(QUERIES.release_expired, ids)]

    async def mark_expiry_checked(self, ids: list[int]) -> None:
        await self.conn.execute(QUERIES.mark_expiry_checked, ids)

    async def status_counts(self, code: str) -> dict[str, int]:
        row = await self.conn.fetchrow(QUERIES.status_counts, code)
        return {k: int(v) for k, v in dict(row or {}).items()}

    async def live_redemptions(self, code: str) -> list[tuple[str, int]]:
        rows = await self.conn.fetch(QUERIES.live_redemptions, code)
        return [(r["order_id"], r["customer_id"]) for r in rows]

    async def known_orders(self, order_ids: list[str]) -> dict[str, str]:
        rows = await self.conn.fetch(QUERIES.known_orders, order_ids)
        return {r["order_id"]: r["status"] for r in rows}

    async def lock_orders(self, order_ids: list[str]) -> None:
        await self.conn.fetchval(QUERIES.lock_orders, order_ids)

    async def park_outcome(self, order_id: str, outcome: str) -> str:
        standing: str = await self.conn.fetchval(QUERIES.park_outcome, order_id, outcome)
        return standing

    async def park_cancellation(self, order_id: str) -> None:
        await self.conn.execute(QUERIES.park_cancellation, order_id)

    async def take_outcome(self, order_id: str) -> str | None:
        outcome: str | None = await self.conn.fetchval(QUERIES.take_outcome, order_id)
        return outcome

    async def purge_outcomes(self, older_than_seconds: float) -> None:
        await self.conn.execute(QUERIES.purge_outcomes, older_than_seconds)

    async def flash_codes(self) -> list[str]:
        return [r["code"] for r in await self.conn.fetch(QUERIES.flash_vouchers)]


class PgVouchersUnitOfWork(PostgresUnitOfWork, VouchersUnitOfWork):
    def bind(self, conn: Conn) -> None:
        self.vouchers = PgVoucherRepository(conn)
