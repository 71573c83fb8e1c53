"""The real APIs for schema fuzzing: hold, payment, voucher and the gateway simulator as uvicorn processes
on free ports, against the TEST database, real Redis and Kafka (scenario S3, docs/reliability.md).

payment-service calls the other three over HTTP, so they all run together: a checkout of an unknown hold
must come back 404 from the real hold-service, not 503 from a dead port.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from ticketing.auth import Role, issue_token
from ticketing_testing import env, free_port, service_process
from ticketing_testing.lifted_limits import UNLIMITED_HOLDS

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "var" / "log" / "tests" / "fuzz"
WEBHOOK_SECRET = "whsec_fuzz_0123456789abcdef0123456789abcd"
# A fuzzed request that makes an API allocate without bound must fail inside that process (MemoryError ->
# a 500 the test reports), not wake the kernel's OOM killer on a machine other processes share.
MEMORY_LIMIT_BYTES = 2 * 1024**3
_LIMITED_UVICORN = ("import resource, runpy, sys; "
                    "resource.setrlimit(resource.RLIMIT_DATA, ({limit}, {limit})); "
                    "sys.argv = ['uvicorn', *sys.argv[1:]]; runpy.run_module('uvicorn', run_name='__main__')")


@dataclass(frozen=True)
class Api:
    name: str
    factory: str
    dsn_variable: str | None
    migrations: Path | None


APIS = {
    "hold-service": Api("hold-service", "hold_service.entrypoints.api.app:get_application", "HOLD_DATABASE_URL",
                        ROOT / "services/hold-service/src/hold_service/sql/migrations"),
    "voucher-service": Api("voucher-service", "voucher_service.entrypoints.api.app:get_application",
                           "VOUCHER_DATABASE_URL",
                           ROOT / "services/voucher-service/src/voucher_service/sql/migrations"),
    "gateway-simulator": Api("gateway-simulator", "gateway_simulator.app:get_application", None, None),
    "payment-service": Api("payment-service", "payment_service.entrypoints.api.app:get_application",
                           "PAYMENT_DATABASE_URL",
                           ROOT / "services/payment-service/src/payment_service/sql/migrations"),
}


@dataclass(frozen=True)
class Stack:
    urls: dict[str, str]
    jwt_secret: str

    def bearer(self, role: Role, sub: int = 1) -> dict[str, str]:
        return {"Authorization": f"Bearer {issue_token(self.jwt_secret, sub=str(sub), role=role)}"}


@pytest.fixture(scope="module")
def fuzz_stack(migrated_dsn: Callable[[str, Path | None], str], kafka_bootstrap: str,
               redis_url: str) -> Iterator[Stack]:
    dsns = {a.dsn_variable: migrated_dsn(a.dsn_variable, a.migrations) for a in APIS.values() if a.dsn_variable}
    ports = {name: free_port() for name in APIS}
    urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    common = {**dsns, "APP_ENV": "dev", "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "REDIS_URL": redis_url,
              "JWT_SECRET": env("JWT_SECRET"), "STRIPE_WEBHOOK_SECRET": WEBHOOK_SECRET,
              "KAFKA_GROUP_PREFIX": f"fuzz-{uuid.uuid4().hex[:8]}-",
              # Fuzzing sends far more than 5 holds a minute per customer; 429 is S4's subject, not S3's.
              **UNLIMITED_HOLDS,
              "HOLD_SERVICE_URL": urls["hold-service"], "VOUCHER_SERVICE_URL": urls["voucher-service"],
              "STRIPE_API_BASE": urls["gateway-simulator"],
              "SIM_WEBHOOK_URL": f"{urls['payment-service']}/payments/callback",
              "GATEWAY_SIMULATOR_PORT": str(ports["gateway-simulator"]),
              "GATEWAY_PUBLIC_URL": urls["gateway-simulator"]}
    LOGS.mkdir(parents=True, exist_ok=True)
    with ExitStack() as procs:
        for name, api in APIS.items():
            args = ["-c", _LIMITED_UVICORN.format(limit=MEMORY_LIMIT_BYTES), "--factory", api.factory,
                    "--host", "127.0.0.1", "--port", str(ports[name])]
            procs.enter_context(service_process(args, common, ready_url=f"{urls[name]}/healthz", timeout=90,
                                                log_path=LOGS / f"{name}.log"))
        yield Stack(urls=urls, jwt_secret=env("JWT_SECRET"))
