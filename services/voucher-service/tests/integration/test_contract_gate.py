"""The FlashGate port's contract, run against the fake (tests/fakes/gate.py) and the Lua scripts on Redis
(adapters/lua: reserve, sent, release): the answers the flash handlers' unit tests lean on, so a script changed
and not the fake fails here."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from types import ModuleType

import pytest
import pytest_asyncio
import redis.asyncio as aioredis
from voucher_service.adapters.gate import RedisFlashGate
from voucher_service.domain.gate import GateResult
from voucher_service.service_layer.gate_ports import FlashGate

pytestmark = pytest.mark.integration
CODE = "CONTRACT"
Loaded = Callable[[int], Awaitable[tuple[FlashGate, str]]]


@pytest_asyncio.fixture(params=["fake", "real"])
async def loaded(request: pytest.FixtureRequest, fakes: ModuleType,
                 redis: aioredis.Redis) -> AsyncIterator[Loaded]:
    """`await loaded(n)`: a gate and a flash voucher's code with `n` uses left."""
    async def load(remaining: int) -> tuple[FlashGate, str]:
        if request.param == "fake":
            return fakes.FakeGate(remaining), CODE
        code = f"C{uuid.uuid4().hex[:12].upper()}"
        gate = RedisFlashGate(redis)
        assert await gate.record(code, "warm", remaining, [], expire_at=int(time.time()) + 3600) == 0
        return gate, code
    yield load


def order() -> str:
    return str(uuid.uuid4())


async def test_uses_are_taken_until_none_is_left(loaded) -> None:
    gate, code = await loaded(2)
    answers = [await gate.reserve(code, customer, 1, order(), 5000) for customer in (11, 12, 13)]
    assert answers == [GateResult.RESERVED, GateResult.RESERVED, GateResult.OUT_OF_STOCK]
    assert (await gate.remaining(code), await gate.standing(code, 11), await gate.standing(code, 13)) == (
        0, (0, 1), (0, 0))


async def test_a_customer_takes_no_more_than_the_per_user_limit(loaded) -> None:
    gate, code = await loaded(5)
    assert [await gate.reserve(code, 21, 2, order(), 5000) for _ in range(3)] == [
        GateResult.RESERVED, GateResult.RESERVED, GateResult.ALREADY_USED]
    assert await gate.standing(code, 21) == (3, 2)


async def test_a_retry_of_an_order_is_sent_again_until_acknowledged_then_a_duplicate(loaded) -> None:
    gate, code = await loaded(3)
    first = order()
    assert await gate.reserve(code, 31, 1, first, 5000) == GateResult.RESERVED
    assert (await gate.order(code, first)).state == "P"
    assert await gate.reserve(code, 31, 1, first, 5000) == GateResult.PENDING
    assert (await gate.order(code, first)).state == "S"
    assert await gate.reserve(code, 32, 1, first, 5000) == GateResult.ORDER_TAKEN  # another customer's order id
    await gate.mark_sent(code, first)
    assert (await gate.order(code, first)).state == "R"
    assert await gate.reserve(code, 31, 1, first, 5000) == GateResult.DUPLICATE
    assert await gate.remaining(code) == 2  # one use for all the retries


async def test_a_release_gives_a_use_back_once_and_the_order_id_is_spent(loaded) -> None:
    gate, code = await loaded(1)
    taken = order()
    assert await gate.reserve(code, 41, 1, taken, 5000) == GateResult.RESERVED
    assert (await gate.holds(code, taken, 41), await gate.holds(code, taken, 42)) == (True, False)
    assert await gate.release(code, taken) == 1
    assert await gate.release(code, taken) == 0
    assert await gate.release(code, order()) == -1
    assert (await gate.order(code, taken)).state == "X"
    assert (await gate.remaining(code), await gate.standing(code, 41)) == (1, (1, 0))
    assert await gate.holds(code, taken, 41) is False
    assert await gate.reserve(code, 41, 1, taken, 5000) == GateResult.ORDER_TAKEN
    assert await gate.reserve(code, 41, 1, order(), 5000) == GateResult.RESERVED


async def test_only_a_pending_order_is_forgotten_and_a_retired_use_is_not_given_back(loaded) -> None:
    gate, code = await loaded(3)
    pending, sent, retired = order(), order(), order()
    for customer, order_id in ((51, pending), (52, sent), (53, retired)):
        assert await gate.reserve(code, customer, 1, order_id, 5000) == GateResult.RESERVED
    await gate.mark_sent(code, sent)
    assert await gate.release(code, sent, forget=True) == 0  # a copy may be in Kafka
    assert await gate.release(code, pending, forget=True) == 1
    assert await gate.order(code, pending) is None  # the client's retry may reserve again
    assert await gate.release(code, retired, retire=True) == 1
    assert (await gate.order(code, retired)).state == "X"
    assert (await gate.remaining(code), await gate.standing(code, 53)) == (1, (1, 0))
    assert await gate.reserve(code, 51, 1, pending, 5000) == GateResult.RESERVED
