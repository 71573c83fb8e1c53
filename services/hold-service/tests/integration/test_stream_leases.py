"""Seat-map streams per client address over several API processes, counted in the real Redis: the cap holds
across processes, an ended stream gives its lease back, a dead process's leases lapse, renewed ones do not."""

from __future__ import annotations

import asyncio
import uuid

from hold_service.adapters.redis_guard import RedisGuard
from hold_service.adapters.stream_leases import StreamLeases
from ticketing.redis_client import redis_client
from ticketing.settings import ServiceSettings


async def test_the_cap_holds_over_processes_and_leases_come_back(redis_url: str) -> None:
    address = f"198.51.100.{uuid.uuid4().int % 250}-{uuid.uuid4().hex[:6]}"  # this test's own key
    guards = [RedisGuard(redis_client(ServiceSettings(redis_url=redis_url), 1.0), 1.0) for _ in range(2)]
    try:
        one, two = (StreamLeases(g, 3, lease_seconds=0.6, renew_seconds=0.2) for g in guards)
        held = [await one.acquire(address), await two.acquire(address), await one.acquire(address)]
        assert all(held)
        assert await two.acquire(address) is None and await one.acquire(address) is None  # 3 over both
        assert await two.acquire("another-client") is not None

        one.release(address, held[0])  # a stream of process one ended
        await asyncio.sleep(0.05)
        taken = await two.acquire(address)
        assert taken is not None and await two.acquire(address) is None

        # Process one dies (its lease is never renewed nor released); two renews its own.
        for _ in range(5):
            await asyncio.sleep(0.2)
            await two.renew()
        assert await two.acquire(address) is not None  # one's lapsed lease is free again
        assert await two.acquire(address) is None  # two's renewed leases still count
    finally:
        for guard in guards:
            await guard.client.aclose()


async def test_without_redis_each_process_still_caps_its_own(redis_url: str) -> None:
    nowhere = ServiceSettings(redis_url="redis://127.0.0.1:9/0")  # nothing listens there
    guard = RedisGuard(redis_client(nowhere, 0.2), 60.0)
    try:
        leases = StreamLeases(guard, 2)
        assert await leases.acquire("a") and await leases.acquire("a")
        assert await leases.acquire("a") is None
        await leases.renew()  # no error
    finally:
        await guard.client.aclose()
