"""The contracts of HoldDirectory (hold-service) and Vouchers (voucher-service), run against the fakes
(tests/fakes/) and the HTTP adapters talking to a stand-in server over a real socket (conftest.py says
why a stand-in)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from payment_service.domain.errors import (
    DependencyUnavailable,
    HoldNotActive,
    HoldNotFound,
    ShowtimeClosed,
    VoucherRejected,
)

pytestmark = pytest.mark.integration


# --- HoldDirectory ------------------------------------------------------------------------------

async def test_a_known_hold_is_read_whole_and_an_unknown_one_is_none(ports) -> None:
    hold = ports.hold_store.add(7, amount=2400, ttl=600)
    assert await ports.holds.get(hold.hold_id) == hold
    assert await ports.holds.get(uuid.uuid4()) is None


async def test_hold_service_decides_the_status(ports) -> None:
    hold = ports.hold_store.add(7)
    ports.hold_store.end(hold.hold_id, "EXPIRED")
    assert (await ports.holds.get(hold.hold_id)).status == "EXPIRED"


async def test_a_hold_is_extended_to_max_of_now_and_until_within_its_cap(ports) -> None:
    hold = ports.hold_store.add(7, ttl=600, age=100)  # taken 100 s ago; the cap is its creation + 1200 s
    assert hold.created_at is not None and (await ports.holds.get(hold.hold_id)).created_at == hold.created_at
    later = hold.expires_at + timedelta(seconds=120)
    assert await ports.holds.extend(hold.hold_id, 7, later) == later
    assert await ports.holds.extend(hold.hold_id, 7, later) == later  # idempotent
    assert await ports.holds.extend(hold.hold_id, 7, hold.expires_at) == later  # never shortened
    capped = await ports.holds.extend(hold.hold_id, 7, later + timedelta(hours=1))
    assert capped == hold.created_at + timedelta(seconds=1200)
    assert (await ports.holds.get(hold.hold_id)).expires_at == capped


async def test_only_a_live_hold_of_its_customer_is_extended(ports) -> None:
    hold = ports.hold_store.add(7)
    until = hold.expires_at + timedelta(seconds=60)
    with pytest.raises(HoldNotFound):
        await ports.holds.extend(hold.hold_id, 8, until)  # another customer's: "not found"
    with pytest.raises(HoldNotFound):
        await ports.holds.extend(uuid.uuid4(), 7, until)
    ports.hold_store.end(hold.hold_id, "RELEASED")
    with pytest.raises(HoldNotActive):
        await ports.holds.extend(hold.hold_id, 7, until)  # never revived
    assert (await ports.holds.get(hold.hold_id)).expires_at == hold.expires_at


async def test_a_hold_of_a_showtime_whose_sales_closed_is_not_extended(ports) -> None:
    hold = ports.hold_store.add(7)
    ports.hold_store.closed.add(hold.showtime_id)
    with pytest.raises(ShowtimeClosed):
        await ports.holds.extend(hold.hold_id, 7, hold.expires_at + timedelta(seconds=60))
    assert (await ports.holds.get(hold.hold_id)).expires_at == hold.expires_at


async def test_hold_service_down_is_unavailable(ports) -> None:
    hold = ports.hold_store.add(7)
    ports.hold_store.down = True
    with pytest.raises(DependencyUnavailable):
        await ports.holds.get(hold.hold_id)


# --- Vouchers -----------------------------------------------------------------------------------

async def test_a_use_is_reserved_once_per_order_and_given_back(ports) -> None:
    ports.voucher_store.add("ONCE", discount=500, limit=1)
    order = uuid.uuid4()
    assert await ports.vouchers.reserve("ONCE", customer_id=7, order_id=order, order_amount=2400) == 500
    assert await ports.vouchers.reserve("ONCE", customer_id=7, order_id=order, order_amount=2400) == 500  # a retry
    with pytest.raises(VoucherRejected) as rejected:
        await ports.vouchers.reserve("ONCE", customer_id=8, order_id=uuid.uuid4(), order_amount=2400)
    assert (rejected.value.status, rejected.value.code) == (409, "OUT_OF_STOCK")
    await ports.vouchers.release("ONCE", order)
    await ports.vouchers.release("ONCE", order)  # idempotent
    assert await ports.vouchers.reserve("ONCE", customer_id=8, order_id=uuid.uuid4(), order_amount=2400) == 500


async def test_an_unknown_voucher_is_rejected_and_has_nothing_to_give_back(ports) -> None:
    with pytest.raises(VoucherRejected) as rejected:
        await ports.vouchers.reserve("NOPE", customer_id=7, order_id=uuid.uuid4(), order_amount=2400)
    assert (rejected.value.status, rejected.value.code) == (404, "NOT_FOUND")
    await ports.vouchers.release("NOPE", uuid.uuid4())


async def test_voucher_service_down_is_unavailable(ports) -> None:
    ports.voucher_store.add("TEN")
    ports.voucher_store.down = True
    with pytest.raises(DependencyUnavailable):
        await ports.vouchers.reserve("TEN", customer_id=7, order_id=uuid.uuid4(), order_amount=2400)
    with pytest.raises(DependencyUnavailable):
        await ports.vouchers.release("TEN", uuid.uuid4())
