"""Running a service's roles (HTTP API, relay, consumers, periodic jobs) until SIGTERM.

Locally one process may run every role; in Kubernetes each role is its own Deployment, so each
entrypoint takes the list of roles to run. Each role it runs is announced as ticketing_role_up{service, role}
(an alert fires when no instance of a role reports at all), each periodic job reports its runs
(ticketing.job_metrics), and the event loop's liveness is served beside /metrics (ticketing.loop_health).
What the process has loaded when its roles start is frozen for the garbage collector, as the APIs freeze theirs
once started (ticketing.api.app.frozen_after_startup): a full collection then stops the loop far less long.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from ticketing import loop_health
from ticketing.job_metrics import JobWatch
from ticketing.logs import log_action
from ticketing.metrics import ROLE_UP

logger = logging.getLogger(__name__)

Role = Callable[[asyncio.Event], Coroutine[Any, Any, None]]


async def run_until_stopped(roles: dict[str, Role], *, service: str, metrics_port: int | None = None,
                            metrics_host: str = "127.0.0.1",
                            loop_stall_seconds: float = loop_health.STALL_SECONDS) -> None:
    """Run the roles until SIGTERM; with `metrics_port`, serve /metrics (Prometheus) and /healthz (the event
    loop's liveness: 503 once the loop has not run for `loop_stall_seconds`) there meanwhile: a worker serves
    no API, and its relay, consumers and jobs are what an operator watches."""
    heartbeat = loop_health.Heartbeat(loop_stall_seconds)
    server = None
    if metrics_port:
        server = loop_health.serve(metrics_port, metrics_host, heartbeat)
        log_action(logger, "runtime.metrics", port=metrics_port, host=metrics_host)
    for role in roles:
        ROLE_UP.labels(service, role).set(1)
    gc.freeze()  # what is loaded by now lives as long as the process: full collections need not walk it
    try:
        await _run(roles, heartbeat)
    finally:
        gc.unfreeze()
        if server is not None:
            server.shutdown()


async def _run(roles: dict[str, Role], heartbeat: loop_health.Heartbeat) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log_action(logger, "runtime.started", roles=sorted(roles))
    tasks: dict[asyncio.Task[None], str] = {
        asyncio.create_task(role(stop), name=name): name for name, role in roles.items()}
    beat = asyncio.create_task(heartbeat.run(stop), name="heartbeat")
    done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    stop.set()
    await asyncio.gather(beat, *tasks, return_exceptions=True)
    for task in done:
        if task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    log_action(logger, "runtime.stopped")


def periodic(name: str, seconds: float, job: Callable[[], Awaitable[object]], *, service: str) -> Role:
    """Run `job` every `seconds`; a failing run is logged and counted, and the next one still happens."""
    async def loop(stop: asyncio.Event) -> None:
        watch = JobWatch(service, name, seconds)
        while not stop.is_set():
            try:
                await job()
            except Exception as exc:  # a job must survive its dependencies' outages
                watch.failed()
                log_action(logger, "job.failed", str(exc), level=logging.WARNING, job=name,
                           error=type(exc).__name__)
            else:
                watch.succeeded()
            try:
                await asyncio.wait_for(stop.wait(), seconds)
            except TimeoutError:
                pass
    return loop


def roles_from_argv(all_roles: Sequence[str], description: str | None = None,
                    argv: list[str] | None = None) -> list[str]:
    """`--roles relay,consumer` -> the roles a worker process runs (all by default); unknown ones refused."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roles", default=",".join(all_roles), help=f"comma-separated subset of {','.join(all_roles)}")
    roles = [r.strip() for r in parser.parse_args(argv).roles.split(",") if r.strip()]
    unknown = set(roles) - set(all_roles)
    if unknown:
        parser.error(f"unknown roles: {', '.join(sorted(unknown))}")
    return roles
