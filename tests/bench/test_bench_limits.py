"""The limits run's Redis figure calls the gate script as hold-service does: the arguments redis-benchmark
sends (bench_limits.gate_command) answered by the real script on the real Redis. (The script took the waiting
room's keys and each customer's slot, the benchmark kept the old arguments, and `make bench` stopped there.)"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest
import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).parent))  # the benchmarks import each other by module name
from bench_limits import GATE_SCRIPT, gate_command

pytestmark = pytest.mark.integration


async def test_the_gate_command_of_the_limits_run_holds_two_seats_then_finds_them_taken(redis_url: str) -> None:
    client = aioredis.from_url(redis_url)
    try:
        sha = await client.script_load(GATE_SCRIPT.read_text())
        command = gate_command(sha, f"test{uuid.uuid4().hex[:6]}")
        numbers = iter(["7", "8", "1", "42"])  # seat A, seat B, the hold, the customer, in the command's order
        first = [next(numbers).join(arg.split("__rand_int__")) if "__rand_int__" in arg else arg for arg in command]
        assert first[3] != first[4]  # two different seats
        assert await client.execute_command(*first) == [[], 0]  # both seats set to the hold; the gate unmarked
        again = [arg.replace("hold-1", "hold-2") for arg in first]
        assert await client.execute_command(*again) == [[1, 2], 0]  # another hold finds both taken
    finally:
        await client.aclose()
