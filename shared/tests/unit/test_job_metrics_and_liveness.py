"""Periodic jobs report their runs (ticketing.job_metrics), and a worker's /healthz follows its event loop
(ticketing.loop_health), not the thread that serves /metrics."""

from __future__ import annotations

import asyncio
import gc
import signal
import textwrap
import time
import uuid

import httpx
from prometheus_client import REGISTRY
from ticketing import loop_health
from ticketing.runtime import periodic
from ticketing_testing import free_port, service_process, wait_http_ok


def sample(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


async def test_a_periodic_job_counts_its_runs_by_outcome_and_stamps_its_last_success() -> None:
    service, name, calls = f"svc-{uuid.uuid4().hex[:6]}", "sweeper", []
    stop = asyncio.Event()

    async def job() -> None:
        calls.append(time.time())
        if len(calls) == 2:
            raise ConnectionError("postgres is down")
        if len(calls) == 3:
            stop.set()

    started = time.time()
    await asyncio.wait_for(periodic(name, 0.01, job, service=service)(stop), 5)
    labels = {"service": service, "job_name": name}
    assert sample("ticketing_periodic_job_runs_total", **labels, outcome="success") == 2
    assert sample("ticketing_periodic_job_runs_total", **labels, outcome="failure") == 1
    assert sample("ticketing_periodic_job_interval_seconds", **labels, schedule="fixed") == 0.01
    assert calls[2] <= sample("ticketing_periodic_job_last_success_timestamp_seconds", **labels) <= time.time()
    assert sample("ticketing_periodic_job_last_success_timestamp_seconds", **labels) >= started


async def test_a_job_that_never_succeeds_keeps_its_start_as_its_last_success() -> None:
    """So the alert (three intervals without success) fires for a job that never worked, too."""
    service, stop, before = f"svc-{uuid.uuid4().hex[:6]}", asyncio.Event(), time.time()

    async def broken() -> None:
        stop.set()
        raise ConnectionError("refused")

    await asyncio.wait_for(periodic("reconcile", 0.01, broken, service=service)(stop), 5)
    labels = {"service": service, "job_name": "reconcile"}
    assert before <= sample("ticketing_periodic_job_last_success_timestamp_seconds", **labels) <= time.time()
    assert sample("ticketing_periodic_job_runs_total", **labels, outcome="success") == 0


def test_healthz_answers_from_the_loops_last_beat() -> None:
    beat = loop_health.Heartbeat(stall_seconds=2)
    app = loop_health.app(beat, metrics=lambda environ, start: [b"metrics"])
    answers: list[str] = []
    body = b"".join(app({"PATH_INFO": "/healthz"}, lambda status, headers: answers.append(status)))
    assert answers == ["200 OK"] and b'"ok"' in body
    beat.last -= 3  # the loop has not beaten for three seconds
    body = b"".join(app({"PATH_INFO": "/healthz"}, lambda status, headers: answers.append(status)))
    assert answers[-1] == "503 Service Unavailable" and b'"stalled"' in body
    assert b"".join(app({"PATH_INFO": "/metrics"}, lambda *_: None)) == b"metrics"


WORKER = textwrap.dedent("""
    import asyncio, sys, time
    from ticketing.runtime import run_until_stopped

    async def blocks_its_loop(stop):
        await asyncio.sleep(1.5)
        time.sleep(4)  # a blocking call in a job: nothing else on the loop runs meanwhile
        await stop.wait()

    asyncio.run(run_until_stopped({"jobs": blocks_its_loop}, service="probe-test", metrics_port=int(sys.argv[1]),
                                  loop_stall_seconds=1.0))
""")


def test_a_worker_whose_loop_is_blocked_is_unhealthy_while_metrics_still_answer(tmp_path) -> None:
    port = free_port()
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    with service_process([str(script), str(port)], {}) as proc:
        url = f"http://127.0.0.1:{port}"
        wait_http_ok(f"{url}/healthz", 10, proc)  # the loop runs: 200
        seen: set[tuple[int, int]] = set()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (503, 200) not in seen:
            health, metrics = httpx.get(f"{url}/healthz", timeout=2), httpx.get(f"{url}/metrics", timeout=2)
            seen.add((health.status_code, metrics.status_code))
            time.sleep(0.2)
        assert (503, 200) in seen  # blocked loop: unhealthy, although the metrics thread still answers
        assert 'ticketing_role_up{role="jobs",service="probe-test"} 1.0' in httpx.get(f"{url}/metrics").text
        wait_http_ok(f"{url}/healthz", 10, proc)  # the loop runs again: healthy again


async def test_a_worker_freezes_what_it_loaded_while_its_roles_run() -> None:
    """A full collection would otherwise walk every imported module's objects while the relay or a consumer
    waits (as the APIs, ticketing.api.app.frozen_after_startup)."""
    from ticketing.runtime import run_until_stopped

    gc.unfreeze()
    seen: list[int] = []

    async def role(stop: asyncio.Event) -> None:
        seen.append(gc.get_freeze_count())

    loop = asyncio.get_running_loop()
    try:
        await run_until_stopped({"probe": role}, service="freeze-test")
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    assert seen and seen[0] > 10_000  # the modules the process had loaded
    assert gc.get_freeze_count() == 0  # unfrozen once the roles end (a test run goes on)
