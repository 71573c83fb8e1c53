"""Running a service's roles (HTTP API, relay, consumers, periodic jobs) until SIGTERM.

Locally one process may run every role; in Kubernetes each role is its own Deployment, so each
entrypoint takes the list of roles to run.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from prometheus_client import start_http_server

from ticketing.logs import log_action

logger = logging.getLogger(__name__)

Role = Callable[[asyncio.Event], Coroutine[Any, Any, None]]


async def run_until_stopped(roles: dict[str, Role], *, metrics_port: int | None = None,
                            metrics_host: str = "127.0.0.1") -> None:
    """Run the roles until SIGTERM; with `metrics_port`, serve /metrics (Prometheus) there meanwhile: a
    worker serves no API, and its relay, consumers and jobs are what an operator watches."""
    if metrics_port:
        start_http_server(metrics_port, addr=metrics_host)
        log_action(logger, "runtime.metrics", port=metrics_port, host=metrics_host)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log_action(logger, "runtime.started", roles=sorted(roles))
    tasks: dict[asyncio.Task[None], str] = {
        asyncio.create_task(role(stop), name=name): name for name, role in roles.items()}
    done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    for task in done:
        if task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    log_action(logger, "runtime.stopped")


def periodic(name: str, seconds: float, job: Callable[[], Awaitable[object]]) -> Role:
    """Run `job` every `seconds`; a failing run is logged and the next one still happens."""
    async def loop(stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await job()
            except Exception as exc:  # a job must survive its dependencies' outages
                log_action(logger, "job.failed", str(exc), level=logging.WARNING, job=name,
                           error=type(exc).__name__)
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
