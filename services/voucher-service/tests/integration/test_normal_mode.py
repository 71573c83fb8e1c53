"""Normal mode against the real test database: R3, per-user limits, idempotency, eligibility."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace

import asyncpg
import pytest
from voucher_service.adapters import reservations
from voucher_service.adapters.repository import QUERIES
from voucher_service.adapters.reservations import PgNormalReservations
from voucher_service.domain.commands import ConfirmReservation, ReleaseReservation, ReserveVoucher
from voucher_service.domain.errors import AlreadyUsed, NotEligible, OutOfStock
from voucher_service.service_layer.handlers import (
    confirm_reservation,
    release_reservation,
    reserve_voucher,
)
from voucher_service.service_layer.ports import Deps
from voucher_testkit import assert_invariant, new_voucher, try_reserve, unique_customer, watched_statements

pytestmark = pytest.mark.integration
RESET = "SELECT pg_advisory_unlock_all();\nCLOSE ALL;\nUNLISTEN *;\nRESET ALL;"  # asyncpg's, on release


async def test_r3_200_customers_on_limit_10_exactly_10(deps: Deps, pool: asyncpg.Pool) -> None:
    code = await new_voucher(deps, limit=10)
    cmds = [ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000) for _ in range(200)]
    outcomes = await asyncio.gather(*(try_reserve(deps, c) for c in cmds))
    assert outcomes.count("ok") == 10
    assert set(outcomes) == {"ok", "OutOfStock"}
    assert await assert_invariant(pool, code) == 10


@pytest.mark.parametrize("limit", [1, 100, 300])
async def test_r3_at_limit_minus_one_500_at_once_one_wins(deps: Deps, pool: asyncpg.Pool,
                                                          limit: int) -> None:
    code = await new_voucher(deps, limit=limit)
    await pool.execute("UPDATE voucher SET used_count = total_limit - 1 WHERE code = $1", code)
    await pool.execute(  # the live rows that used_count counts (keeps the invariant true)
        "INSERT INTO voucher_redemption (voucher_code, customer_id, order_id, status, slot, per_user_limit) "
        "SELECT $1::varchar, -g, $1::varchar || '-pre-' || g, 'RESERVED', 0, 1 FROM generate_series(1, $2) g",
        code, limit - 1)
    cmds = [ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000) for _ in range(500)]
    outcomes = await asyncio.gather(*(try_reserve(deps, c) for c in cmds))
    assert outcomes.count("ok") == 1
    assert await assert_invariant(pool, code) == limit


async def test_retries_with_one_order_id_consume_once(deps: Deps, pool: asyncpg.Pool) -> None:
    code = await new_voucher(deps, limit=5)
    cmd = ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000)
    outcomes = await asyncio.gather(*(try_reserve(deps, cmd) for _ in range(20)))
    assert outcomes == ["ok"] * 20
    assert await assert_invariant(pool, code) == 1


async def test_per_user_limit_one_and_three(deps: Deps, pool: asyncpg.Pool) -> None:
    for per_user in (1, 3):
        code = await new_voucher(deps, limit=50, per_user=per_user)
        customer = unique_customer()
        cmds = [ReserveVoucher(code, customer, str(uuid.uuid4()), 1000) for _ in range(12)]
        outcomes = await asyncio.gather(*(try_reserve(deps, c) for c in cmds))
        assert outcomes.count("ok") == per_user, outcomes
        assert set(outcomes) - {"ok"} == {"AlreadyUsed"}
        assert await assert_invariant(pool, code) == per_user


async def test_db_refuses_a_fourth_slot(deps: Deps, pool: asyncpg.Pool) -> None:
    code = await new_voucher(deps, limit=50, per_user=1)
    with pytest.raises(asyncpg.CheckViolationError):
        await pool.execute("INSERT INTO voucher_redemption (voucher_code, customer_id, order_id, status, "
                           "slot, per_user_limit) VALUES ($1, 1, $2, 'RESERVED', 1, 1)",
                           code, str(uuid.uuid4()))


async def test_eligibility_window_and_minimum(deps: Deps) -> None:
    code = await new_voucher(deps, min_amount=5000)
    with pytest.raises(NotEligible):
        await reserve_voucher(ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 4999), deps)
    later = await new_voucher(deps, starts_in=3600, ends_in=7200)
    with pytest.raises(NotEligible):
        await reserve_voucher(ReserveVoucher(later, unique_customer(), str(uuid.uuid4()), 10000), deps)


async def test_confirm_release_idempotent_and_reuse(deps: Deps, pool: asyncpg.Pool) -> None:
    code = await new_voucher(deps, limit=1)
    customer, order = unique_customer(), str(uuid.uuid4())
    await reserve_voucher(ReserveVoucher(code, customer, order, 1000), deps)
    assert await release_reservation(ReleaseReservation(order, code), deps)
    assert await release_reservation(ReleaseReservation(order, code), deps)
    assert await assert_invariant(pool, code) == 0
    with pytest.raises(AlreadyUsed):  # the old order id is spent: a late retry takes nothing
        await reserve_voucher(ReserveVoucher(code, customer, order, 1000), deps)
    second = str(uuid.uuid4())
    await reserve_voucher(ReserveVoucher(code, customer, second, 1000), deps)  # the slot is free again
    assert await confirm_reservation(ConfirmReservation(second, code), deps)
    assert await confirm_reservation(ConfirmReservation(second, code), deps)
    with pytest.raises(OutOfStock):
        await reserve_voucher(ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000), deps)
    with pytest.raises(AlreadyUsed):
        await release_reservation(ReleaseReservation(second, code), deps)
    assert await assert_invariant(pool, code) == 1


async def test_a_reservation_is_one_statement_in_its_own_transaction(deps: Deps, pool: asyncpg.Pool,
                                                                      voucher_dsn: str) -> None:
    """No BEGIN, no COMMIT, no look-up before the hot row: the round trips a reservation waits for."""
    code = await new_voucher(deps, limit=5)
    await reserve_voucher(ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000), deps)  # terms cached
    async with watched_statements(voucher_dsn) as (watched, statements):
        counted = replace(deps, reservations=PgNormalReservations(watched))
        customer, order = unique_customer(), str(uuid.uuid4())
        await reserve_voucher(ReserveVoucher(code, customer, order, 1000), counted)
        await asyncio.sleep(0.2)  # query loggers are called soon after, not during; the pool's reset runs too
        taken = list(statements)
        await reserve_voucher(ReserveVoucher(code, customer, order, 1000), counted)  # a retry: the same answer
    assert taken == [QUERIES.reserve_use, RESET]  # the pool's reset, after the answer
    assert await assert_invariant(pool, code) == 2


async def test_reservations_that_come_together_are_written_by_one_statement(deps: Deps, pool: asyncpg.Pool,
                                                                           voucher_dsn: str) -> None:
    """One UPDATE of the hot row and one COMMIT for a burst; the ones it may not surely write (a customer twice,
    an order twice, a spent order) are each asked on their own and get their own verdicts."""
    code = await new_voucher(deps, limit=100)
    spent = ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000)
    await reserve_voucher(spent, deps)
    await release_reservation(ReleaseReservation(spent.order_id, code), deps)
    burst = [ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000) for _ in range(30)]
    async with watched_statements(voucher_dsn, size=2) as (watched, statements):
        counted = replace(deps, reservations=PgNormalReservations(watched))
        assert await asyncio.gather(*(try_reserve(counted, c) for c in burst)) == ["ok"] * 30
        assert statements.count(QUERIES.reserve_together) == 1 and QUERIES.reserve_use not in statements
        twice = ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000)
        mixed = [twice, replace(twice, order_id=str(uuid.uuid4())), spent, burst[0],
                 ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000)]
        outcomes = await asyncio.gather(*(try_reserve(counted, c) for c in [*mixed, mixed[0]]))
    assert sorted(outcomes[:2]) == ["AlreadyUsed", "ok"]  # one customer twice: one use (per_user_limit 1)
    assert outcomes[2:5] == ["AlreadyUsed", "ok", "ok"]  # a spent order; a retry; a new one
    assert outcomes[5] == outcomes[0]  # an order twice: one answer
    assert await assert_invariant(pool, code) == 32  # the burst, one of the twins, the new one


async def test_a_burst_bigger_than_the_uses_left_sells_exactly_what_is_left(deps: Deps, pool: asyncpg.Pool) -> None:
    code = await new_voucher(deps, limit=25)
    first = [ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000) for _ in range(20)]
    assert await asyncio.gather(*(try_reserve(deps, c) for c in first)) == ["ok"] * 20
    second = [ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000) for _ in range(20)]
    outcomes = await asyncio.gather(*(try_reserve(deps, c) for c in second))
    assert outcomes.count("ok") == 5 and set(outcomes) == {"ok", "OutOfStock"}
    assert await assert_invariant(pool, code) == 25


@pytest.mark.parametrize("kept", [True, False], ids=["holders kept", "too many holders to keep"])
async def test_after_a_sell_out_the_crowd_is_answered_without_the_hot_row(
        deps: Deps, pool: asyncpg.Pool, voucher_dsn: str, kept: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The process's sold-out cache: late requests cost no statement at all (the voucher's redemptions were read
    once, at the sell-out), or, for a voucher with more redemptions than a process keeps, one read of their order
    ids per batch; never a statement on the voucher's row. A retry of the order that holds the use still gets
    its 201; a use given back in this process is offered again at once."""
    if not kept:
        monkeypatch.setattr(reservations, "HOLDERS_KEPT", 0)
    code = await new_voucher(deps, limit=1)
    held = ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000)
    async with watched_statements(voucher_dsn, size=2) as (watched, statements):
        counted = replace(deps, reservations=PgNormalReservations(watched, sold_out_ttl=60))
        assert await try_reserve(counted, held) == "ok"
        assert await try_reserve(counted, ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000)) \
            == "OutOfStock"  # the answer that fills the cache
        await asyncio.sleep(0.2)
        statements.clear()
        crowd = [ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000) for _ in range(20)]
        outcomes = await asyncio.gather(*(try_reserve(counted, c) for c in [*crowd, held]))
        await asyncio.sleep(0.2)
        taken = list(statements)  # asyncpg may add its type introspection on a connection new to varchar[]
        assert outcomes == ["OutOfStock"] * 20 + ["ok"]
        assert taken == [] if kept else taken.count(QUERIES.redemptions_of) == 1
        assert QUERIES.reserve_use not in taken and QUERIES.reserve_together not in taken
        assert await release_reservation(ReleaseReservation(held.order_id, code), counted)
        assert await try_reserve(counted, crowd[0]) == "ok"
    assert await assert_invariant(pool, code) == 1
