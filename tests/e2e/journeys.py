"""The journeys customers take (scenario R14, docs/reliability.md), one function each, drawn at random with a
seeded weight.

Each journey is what a customer (or the gateway on their behalf) may really do; none of them waits for an
outcome the contract does not promise to the customer. Late, duplicated, delayed and missing callbacks come
from the simulator's delivery modes; "pay late" is a payment attempted after the session ended; "last
second" pays 1-2 s before it ends and "late checkout" checks out when the hold has a second or two left
(docs/saga.md: the checkout extends the hold past the session, so both book).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

from .customers import Customer, seconds_until
from .saga.history import Journey

Step = Callable[[Customer, Journey, random.Random], Awaitable[None]]


async def book(c: Customer, j: Journey, rng: random.Random) -> None:
    """Hold, check out (a voucher half of the time, quoted first), pay; the callback comes in any way."""
    if not (hold := await c.take_hold(j, rng)):
        return
    voucher = c.pick_voucher(rng, 0.5)
    if voucher and rng.random() < 0.5:
        await c.quote(j, voucher, hold["amountCents"])
    if not (co := await c.checkout(j, voucher)):
        return
    how = rng.choice(("page", "normal", "duplicate", "delayed"))
    if how == "page":
        await c.pay_page(j, co)
    else:
        await c.pay_sim(j, co, delivery=how, delay=rng.uniform(0.3, 2.0))


async def decline_then_retry(c: Customer, j: Journey, rng: random.Random) -> None:
    """The card is declined; once the payment shows FAILED, a new checkout of the same hold with the same
    voucher (a new Idempotency-Key) must get the discount again (docs/saga.md), then it is paid."""
    if not (await c.take_hold(j, rng)):
        return
    voucher = c.pick_voucher(rng, 0.7, fresh=True)
    if not (co := await c.checkout(j, voucher)):
        return
    if rng.random() < 0.5:
        await c.pay_page(j, co, action="decline")
    else:
        await c.pay_sim(j, co, outcome="failed", delivery=rng.choice(("normal", "duplicate")))
    if await c.await_payment(j, co["paymentId"], {"FAILED"}, c.shop.hold_ttl) != "FAILED":
        return
    j.notes.append("declined")
    discounted = voucher if co["discountCents"] > 0 else None
    retry = None
    for _ in range(3):  # the release of the declined attempt's use may take a moment to land
        retry = await c.checkout(j, discounted, fallback=False)
        if retry or c.last_error != "ALREADY_USED":
            break
        await asyncio.sleep(1.0)
    if retry is None and c.last_error == "ALREADY_USED":
        j.notes.append("retry_refused_already_used")  # the checker counts it against the contract
        retry = await c.checkout(j, None)
    if retry:
        j.notes.append("retried")
        await c.pay_sim(j, retry)


async def cancel(c: Customer, j: Journey, rng: random.Random) -> None:
    """Cancel before checkout, or after it (then maybe try the stale hosted page)."""
    if not (await c.take_hold(j, rng)):
        return
    co = await c.checkout(j, c.pick_voucher(rng, 0.4)) if rng.random() < 0.6 else None
    await c.cancel(j)
    if co and rng.random() < 0.5:
        await c.pay_page(j, co)


async def cancel_race(c: Customer, j: Journey, rng: random.Random) -> None:
    """Cancel while the checkout runs, or at the moment of the payment (issue 11, case 4: a session made
    while the hold is being cancelled must not take money that is never given back)."""
    if not (await c.take_hold(j, rng)):
        return
    voucher = c.pick_voucher(rng, 0.4)
    if rng.random() < 0.5:
        async def cancel_soon() -> None:
            await asyncio.sleep(rng.uniform(0.0, 0.4))  # somewhere between the hold check and the session
            await c.cancel(j)
        co, _ = await asyncio.gather(c.checkout(j, voucher), cancel_soon())
        if co:
            await c.pay_page(j, co)
        return
    if co := await c.checkout(j, voucher):
        await asyncio.gather(c.cancel(j), c.pay_sim(j, co))


async def never_pay(c: Customer, j: Journey, rng: random.Random) -> None:
    if await c.take_hold(j, rng) and rng.random() < 0.6:
        await c.checkout(j, c.pick_voucher(rng, 0.5))


async def pay_late(c: Customer, j: Journey, rng: random.Random) -> None:
    """Try to pay after the gateway session ended: the gateway refuses, nothing is charged."""
    if not (await c.take_hold(j, rng)) or not (co := await c.checkout(j, c.pick_voucher(rng, 0.4))):
        return
    await asyncio.sleep(max(0.0, seconds_until(co["expiresAt"])) + rng.uniform(0.2, 1.0))
    await c.pay_page(j, co)


async def late_callback(c: Customer, j: Journey, rng: random.Random) -> None:
    """Paid in time, but the callback arrives after the session ended (R9): the reconciler settles the payment
    at the session's end, within the grace its hold outlives it by, so it books; a callback later still
    changes nothing."""
    if not (await c.take_hold(j, rng)) or not (co := await c.checkout(j, c.pick_voucher(rng, 0.4))):
        return
    late = max(0.0, seconds_until(co["expiresAt"])) + rng.uniform(0.5, 2.5)
    await c.pay_sim(j, co, delivery="delayed", delay=late)


async def last_second(c: Customer, j: Journey, rng: random.Random) -> None:
    """Pays 1-2 s before the session ends (R17), the callback coming normally, late or never: booked, never
    refunded for lateness."""
    if not (await c.take_hold(j, rng)) or not (co := await c.checkout(j, c.pick_voucher(rng, 0.3))):
        return
    await asyncio.sleep(max(0.0, seconds_until(co["expiresAt"]) - rng.uniform(1.0, 2.0)))
    await c.pay_sim(j, co, delivery=rng.choice(("normal", "delayed", "never")), delay=rng.uniform(0.5, 3.0))


async def late_checkout(c: Customer, j: Journey, rng: random.Random) -> None:
    """Checks out when the hold has a second or two left: the checkout extends it past a whole session (or, too
    close to the hold's maximum, says to hold again); then pays, at once or at the last second."""
    if not (hold := await c.take_hold(j, rng)):
        return
    await asyncio.sleep(max(0.0, seconds_until(hold["expiresAt"]) - rng.uniform(0.5, 2.0)))
    if not (co := await c.checkout(j, c.pick_voucher(rng, 0.3))):
        return
    j.notes.append("late_checkout")
    if rng.random() < 0.5:
        await asyncio.sleep(max(0.0, seconds_until(co["expiresAt"]) - rng.uniform(1.0, 2.0)))
    await c.pay_sim(j, co, delivery=rng.choice(("normal", "never")))


async def missing_callback(c: Customer, j: Journey, rng: random.Random) -> None:
    """The callback never comes (R10): reconciliation settles it, paid or declined."""
    if await c.take_hold(j, rng) and (co := await c.checkout(j, c.pick_voucher(rng, 0.4))):
        await c.pay_sim(j, co, outcome="succeeded" if rng.random() < 0.8 else "failed", delivery="never")


async def pay_twice(c: Customer, j: Journey, rng: random.Random) -> None:
    """The Pay button pressed twice, then the test control once more with a duplicated callback."""
    if await c.take_hold(j, rng) and (co := await c.checkout(j, c.pick_voucher(rng, 0.4))):
        await asyncio.gather(c.pay_page(j, co), c.pay_page(j, co))
        await c.pay_sim(j, co, delivery="duplicate")


async def voucher_abuse(c: Customer, j: Journey, rng: random.Random) -> None:
    """After a discounted checkout the customer tries to give the use back himself, by paymentId and by
    bookingId (scenario S5, docs/reliability.md), and to confirm it; then pays, or not."""
    if not (await c.take_hold(j, rng)) or not (voucher := c.pick_voucher(rng, 1.0)):
        return
    if not (co := await c.checkout(j, voucher)) or co["discountCents"] == 0:
        return
    for order in (co["paymentId"], co["bookingId"]):
        await c.release_voucher(j, voucher, order)
    await c.confirm_voucher(j, voucher, co["paymentId"])
    if rng.random() < 0.6:
        await c.pay_sim(j, co)


async def double_checkout(c: Customer, j: Journey, rng: random.Random) -> None:
    """Two checkouts of one hold at once, with different keys: at most one live payment; pay what came back."""
    if not (await c.take_hold(j, rng)):
        return
    voucher = c.pick_voucher(rng, 0.5)
    done = await asyncio.gather(c.checkout(j, voucher, fallback=False), c.checkout(j, voucher, fallback=False))
    for co in done:
        if co:
            await c.pay_sim(j, co)


SCENARIOS: dict[str, tuple[float, Step]] = {
    "book": (4.0, book),
    "decline_then_retry": (2.0, decline_then_retry),
    "cancel": (1.5, cancel),
    "cancel_race": (1.5, cancel_race),
    "never_pay": (1.0, never_pay),
    "pay_late": (1.0, pay_late),
    "late_callback": (1.0, late_callback),
    "last_second": (1.5, last_second),
    "late_checkout": (1.0, late_checkout),
    "missing_callback": (1.5, missing_callback),
    "pay_twice": (1.0, pay_twice),
    "voucher_abuse": (1.0, voucher_abuse),
    "double_checkout": (0.5, double_checkout),
}


def draw(rng: random.Random) -> tuple[str, Step]:
    names = sorted(SCENARIOS)
    name = rng.choices(names, weights=[SCENARIOS[n][0] for n in names])[0]
    return name, SCENARIOS[name][1]


async def shopper(c: Customer, until: Callable[[], bool]) -> int:
    """One customer's journeys, one after the other, until `until()`; returns how many it ran."""
    number = 0
    while not until():
        rng = c.rng(number)
        name, step = draw(rng)
        j = c.shop.history.journey(c.id, name)
        await step(c, j, rng)
        number += 1
        await asyncio.sleep(rng.uniform(0.0, 0.3))
    return number


def summary(journeys: dict[int, Journey]) -> dict[str, Any]:
    by_scenario: dict[str, int] = {}
    for j in journeys.values():
        by_scenario[j.scenario] = by_scenario.get(j.scenario, 0) + 1
    return dict(sorted(by_scenario.items()))
