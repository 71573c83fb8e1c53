"""The e2e stack: the platform's processes on free ports, against the TEST database, real Kafka and Redis.

`start_stack` runs any subset of: the SMTP sink, the gateway simulator, hold-service (API + worker),
payment-service (API + worker), voucher-service (API + worker) and the notifier (faust worker), each through
`ticketing_testing.service_process`, with one fresh KAFKA_GROUP_PREFIX per stack.

A fresh consumer group starts at the earliest offset of the shared topics, i.e. every other run's history
(thousands of events, tens of thousands on voucher-reserved after a benchmark): reading it took a minute
on a busy machine, and applied old events to other runs' rows of the shared test database. So the stack's
groups are created at the current end offsets before its processes start (nothing of this stack can be
older), and the stack is handed out once its consumers are there.

The returned `Stack` also injects process faults (scenarios R7, R13 of docs/reliability.md): `kill` (SIGKILL),
`restart` and `pause` (SIGSTOP for some seconds, then SIGCONT).
"""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ticketing.launcher import API_SERVER_OPTIONS
from ticketing_testing import free_port, service_process, start_at_end, wait_http_ok
from ticketing_testing.lifted_limits import UNLIMITED_HOLDS

from .saga.offsets import KafkaView
from .saga.scope import consumer_groups

ROOT = Path(__file__).resolve().parents[2]
MIGRATIONS = {
    "hold": ("HOLD_DATABASE_URL", ROOT / "services/hold-service/src/hold_service/sql/migrations"),
    "payment": ("PAYMENT_DATABASE_URL", ROOT / "services/payment-service/src/payment_service/sql/migrations"),
    "voucher": ("VOUCHER_DATABASE_URL", ROOT / "services/voucher-service/src/voucher_service/sql/migrations"),
    "notifier": ("NOTIFIER_DATABASE_URL", ROOT / "services/notifier/src/notifier/sql/migrations"),
}
SERVICES = ("smtp", "sim", "hold", "pay", "voucher", "notifier")
WORKER_METRICS = {"hold-worker": "hold", "pay-worker": "pay", "voucher-worker": "voucher"}  # their /metrics ports
QR_SEED = base64.b64encode(b"e2e-ticket-journey-seed-32-bytes").decode()
WEBHOOK_SECRET = "whsec_e2e_stack_only_0123456789abcdef0123"


@dataclass(frozen=True)
class Timings:
    """The timings of docs/configuration.md (defaults = production values); tests shorten them."""

    hold_ttl: float = 600
    session_ttl: int = 480
    sweep_interval: float = 15
    reconcile_after: int = 900
    reconcile_interval: float = 60
    voucher_ttl: float = 900
    voucher_sweep_interval: float = 15
    hold_max: float = 1200
    confirm_grace: float = 120
    min_session: float = 60

    def hold_env(self) -> dict[str, str]:
        return {"HOLD_TTL_SECONDS": str(self.hold_ttl), "SWEEP_INTERVAL_SECONDS": str(self.sweep_interval),
                "HOLD_MAX_SECONDS": str(self.hold_max)}

    def payment_env(self) -> dict[str, str]:
        return {"PAYMENT_SESSION_TTL_SECONDS": str(self.session_ttl),
                "RECONCILE_AFTER_SECONDS": str(self.reconcile_after),
                "RECONCILE_INTERVAL_SECONDS": str(self.reconcile_interval),
                "HOLD_MAX_SECONDS": str(self.hold_max), "PAYMENT_CONFIRM_GRACE_SECONDS": str(self.confirm_grace),
                "PAYMENT_MIN_SESSION_SECONDS": str(self.min_session)}

    def voucher_env(self) -> dict[str, str]:
        return {"VOUCHER_RESERVATION_TTL_SECONDS": str(self.voucher_ttl),
                "SWEEP_INTERVAL_SECONDS": str(self.voucher_sweep_interval),
                "RECONCILE_INTERVAL_SECONDS": str(self.voucher_sweep_interval)}


@dataclass
class Proc:
    """One service process, kept restartable: what started it is what restarts it."""

    name: str
    args: list[str]
    env: dict[str, str]
    ready_url: str | None
    log_path: Path
    popen: subprocess.Popen[bytes] | None = None


@dataclass
class Stack:
    url: dict[str, str]
    dsn: dict[str, str]  # hold, payment, voucher, notifier -> the role's DSN on the test database
    mail_dir: Path
    jwt_secret: str
    bootstrap: str
    redis_url: str
    group_prefix: str
    timings: Timings
    services: tuple[str, ...]
    hold_limits: dict[str, str] = field(default_factory=lambda: dict(UNLIMITED_HOLDS))  # see start_stack
    extra_env: dict[str, dict[str, str]] = field(default_factory=dict)  # service -> more of its environment
    procs: dict[str, Proc] = field(default_factory=dict)
    started_in: float = 0.0  # seconds from the first process started to the consumers caught up
    _exits: ExitStack = field(default_factory=ExitStack)

    def metrics_urls(self) -> list[str]:
        """Every /metrics this stack serves: the APIs, the workers (METRICS_PORT) and the notifier."""
        names = [n for n in ("hold", "pay", "voucher", "sim", "notifier") if n in self.services]
        names += [worker for worker, service in WORKER_METRICS.items() if service in self.services]
        return [f"{self.url[n]}/metrics" for n in names]

    def consumer_groups(self) -> dict[str, list[str]]:
        """topic -> the consumer groups (Kafka group ids) this stack runs on it."""
        return consumer_groups(self.group_prefix, self.services)

    def start(self, proc: Proc, *, wait: bool = True) -> None:
        self.procs[proc.name] = proc
        proc.popen = self._exits.enter_context(service_process(proc.args, proc.env, log_path=proc.log_path))
        if wait:
            self.wait_ready(proc)

    def wait_ready(self, proc: Proc, timeout: float = 180) -> None:
        if proc.ready_url:
            wait_http_ok(proc.ready_url, timeout, proc.popen)

    def kill(self, name: str) -> None:
        """SIGKILL: no shutdown hook runs (uncommitted offsets, in-flight sends and effects are cut)."""
        popen = self.procs[name].popen
        assert popen is not None
        popen.kill()
        popen.wait()

    def restart(self, name: str) -> None:
        """Start the process again with the same command and environment; blocks until it is ready."""
        self.start(self.procs[name])

    async def pause(self, name: str, seconds: float) -> None:
        """SIGSTOP for `seconds`, then SIGCONT: the process keeps its sockets and state but runs nothing."""
        popen = self.procs[name].popen
        assert popen is not None
        os.kill(popen.pid, signal.SIGSTOP)
        try:
            await asyncio.sleep(seconds)
        finally:
            os.kill(popen.pid, signal.SIGCONT)

    def _terminate_all(self) -> None:
        # SIGTERM to all first, so their shutdowns overlap; service_process then waits for each.
        for proc in self.procs.values():
            if proc.popen is not None and proc.popen.poll() is None:
                os.kill(proc.popen.pid, signal.SIGCONT)  # a paused process cannot handle SIGTERM
                proc.popen.terminate()


def _uvicorn(factory: str, port: int) -> list[str]:
    """Served as `ticketing-run` serves the APIs (the peer's address decides, the head-size limit)."""
    return ["-m", "uvicorn", "--factory", factory, "--host", "127.0.0.1", "--port", str(port), *API_SERVER_OPTIONS]


def _plan(s: Stack, ports: dict[str, int], logs: Path) -> list[Proc]:
    """Every process of the stack (none needs another to start: they find each other per request)."""
    url, t = s.url, s.timings
    common = {"KAFKA_BOOTSTRAP_SERVERS": s.bootstrap, "KAFKA_GROUP_PREFIX": s.group_prefix, "APP_ENV": "dev",
              "REDIS_URL": s.redis_url,
              "STRIPE_WEBHOOK_SECRET": WEBHOOK_SECRET, "JWT_SECRET": s.jwt_secret}
    db = {MIGRATIONS[k][0]: v for k, v in s.dsn.items()}
    hold = {**common, **db, **t.hold_env(), **s.hold_limits, "QR_SIGNING_KEY": QR_SEED}  # the notifier's key pair
    # Only the services of this stack: a missing one is unreachable, rather than some other stack's on 8003.
    pay = {**common, **db, **t.payment_env(), "HOLD_SERVICE_URL": url["hold"], "STRIPE_API_BASE": url["sim"],
           "CHECKOUT_RETURN_URL": f"{url['hold']}/pages/showtimes/{{showtimeId}}",
           "VOUCHER_SERVICE_URL": url["voucher"] if "voucher" in s.services else "http://127.0.0.1:9"}
    voucher = {**common, **db, **t.voucher_env(), "PAYMENT_SERVICE_URL": url["pay"]}
    sim = {**common, "GATEWAY_SIMULATOR_PORT": str(ports["sim"]), "GATEWAY_PUBLIC_URL": url["sim"],
           "CALLBACK_BACKOFF_INITIAL": "0.2", "SIM_WEBHOOK_URL": f"{url['pay']}/payments/callback"}
    notifier = {**common, **db, "SMTP_PORT": str(ports["smtp"]), "HTTP_PORT": str(ports["notifier"]),
                "QR_SIGNING_KEY": QR_SEED, "SENDER_INTERVAL_SECONDS": "0.5"}

    hold, pay, voucher, notifier = ({**env, **s.extra_env.get(name, {})} for name, env in
                                    (("hold", hold), ("pay", pay), ("voucher", voucher), ("notifier", notifier)))

    def proc(name: str, args: list[str], env: dict[str, str], ready: str | None) -> Proc:
        return Proc(name, args, env, ready, logs / f"{name}.log")

    plan = {
        "smtp": [proc("smtp-sink", ["-m", "smtp_sink", "--port", str(ports["smtp"]),
                                    "--dir", str(s.mail_dir)], {}, None)],
        "sim": [proc("simulator", ["-m", "gateway_simulator"], sim, f"{url['sim']}/healthz")],
        "hold": [proc("hold-api", _uvicorn("hold_service.entrypoints.api.app:get_application", ports["hold"]),
                      hold, f"{url['hold']}/healthz"),
                 proc("hold-worker", ["-m", "hold_service.entrypoints.worker"],
                      {**hold, "METRICS_PORT": str(ports["hold-worker"])}, None)],
        "voucher": [proc("voucher-api", _uvicorn("voucher_service.entrypoints.api.app:get_application",
                                                 ports["voucher"]), voucher, f"{url['voucher']}/healthz"),
                    proc("voucher-worker", ["-m", "voucher_service.entrypoints.worker"],
                         {**voucher, "METRICS_PORT": str(ports["voucher-worker"])}, None)],
        "pay": [proc("pay-api", _uvicorn("payment_service.entrypoints.api.app:get_application", ports["pay"]),
                     pay, f"{url['pay']}/healthz"),
                proc("pay-worker", ["-m", "payment_service.entrypoints.worker"],
                     {**pay, "METRICS_PORT": str(ports["pay-worker"])}, None)],
        "notifier": [proc("notifier-worker", ["-m", "notifier.entrypoints.worker"], notifier,
                          f"{url['notifier']}/readyz")],
    }
    return [p for name in SERVICES if name in s.services for p in plan[name]]


@contextmanager
def start_stack(migrated_dsn: Callable[[str, Path], str], *, bootstrap: str, redis_url: str, jwt_secret: str,
                mail_dir: Path, logs: Path, timings: Timings = Timings(),
                services: tuple[str, ...] = SERVICES,
                hold_limits: dict[str, str] = UNLIMITED_HOLDS,
                extra_env: Callable[[dict[str, str]], dict[str, dict[str, str]]] | None = None) -> Iterator[Stack]:
    """Start `services` (see SERVICES), wait for readiness and consumer catch-up; stop them all on exit.
    `hold_limits`: hold-service's rate limits, lifted for the tests (their clients are all 127.0.0.1); {}
    runs them as deployed (the demo's stack, whose customers come from many addresses, as on `make up`).
    `extra_env`: the stack's URLs -> more environment per service (hold, pay, voucher, notifier)."""
    dsn = {name: migrated_dsn(variable, folder) for name, (variable, folder) in MIGRATIONS.items()}
    ports = {name: free_port() for name in (*SERVICES, *WORKER_METRICS)}
    url = {name: f"http://127.0.0.1:{port}" for name, port in ports.items() if name != "smtp"}
    stack = Stack(url=url, dsn=dsn, mail_dir=mail_dir, jwt_secret=jwt_secret, bootstrap=bootstrap,
                  redis_url=redis_url, group_prefix=f"e2e-{uuid.uuid4().hex[:8]}-", timings=timings, services=services,
                  hold_limits=dict(hold_limits), extra_env=extra_env(url) if extra_env else {})
    logs.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    asyncio.run(start_at_end(stack.bootstrap, stack.consumer_groups()))
    with stack._exits:
        try:
            # All at once, then wait: each process spends seconds of CPU importing, so starting them one
            # after the other costs the sum of those seconds, starting them together about the longest.
            for proc in _plan(stack, ports, logs):
                stack.start(proc, wait=False)
            for proc in stack.procs.values():
                stack.wait_ready(proc)
            asyncio.run(_caught_up(stack))
            stack.started_in = time.monotonic() - began
            yield stack
        finally:
            stack._terminate_all()


async def _caught_up(stack: Stack, timeout: float = 180, slack: int = 20) -> None:
    async with KafkaView(stack.bootstrap) as kafka:
        await kafka.wait_caught_up(stack.consumer_groups(), timeout=timeout, slack=slack)
