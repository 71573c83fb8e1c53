"""purge_expired_records on the fakes: callback ids and idempotency keys go after their own retention."""

from __future__ import annotations

import uuid

from payment_service.service_layer.housekeeping import purge_expired_records

DAY = 86400


async def kept(world) -> tuple[list[str], list[str]]:  # type: ignore[no-untyped-def]
    await purge_expired_records(world.deps)
    async with world.deps.uow() as uow:
        return ([e for e in ("evt_old", "evt_young") if await uow.callbacks.seen(e)],
                [k for k in ("old", "young") if await uow.keys.get(7, k) is not None])


async def test_records_older_than_their_retention_go_and_younger_ones_stay(kit) -> None:
    world = kit.fakes.fake_deps(callback_event_retention_seconds=3 * DAY, idempotency_retention_seconds=DAY)
    for age, then in (("old", 2 * DAY), ("young", DAY / 2)):
        async with world.deps.uow() as uow:
            await uow.callbacks.record(f"evt_{age}", "checkout.session.completed", None)
            await uow.keys.claim(7, age, "h", uuid.uuid4())
            await uow.commit()
        world.clock.advance(then)
    assert await kept(world) == (["evt_old", "evt_young"], ["young"])  # 2.5 and 0.5 days old
    world.clock.advance(DAY)
    assert await kept(world) == (["evt_young"], [])  # 3.5 and 1.5 days old
