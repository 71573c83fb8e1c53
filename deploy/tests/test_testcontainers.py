"""The testcontainers path: with a Docker-compatible API (podman's socket here) and TICKETING_TEST_INFRA=containers,
integration tests run against the project's own infrastructure images instead of the native services.

A pytest session of its own runs a few integration tests that need Postgres, Redis and Kafka; its header names
the containers' addresses (none of them the native ports), and the tests pass."""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from deploy_support import REPO, run

TESTS = ["shared/tests/integration/test_outbox_relay.py",
         "services/hold-service/tests/integration/test_expiry_and_confirm.py"]


@pytest.fixture(scope="module")
def docker_api() -> Iterator[str]:
    """podman's Docker-compatible API on a socket of this run's own."""
    socket = Path(f"/tmp/ticketing-podman-{uuid.uuid4().hex[:8]}.sock")
    service = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{socket}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not socket.exists():
            assert time.monotonic() < deadline and service.poll() is None, "podman system service did not start"
            time.sleep(0.2)
        yield f"unix://{socket}"
    finally:
        service.terminate()
        service.wait(10)
        socket.unlink(missing_ok=True)


def test_integration_tests_run_on_testcontainers(images: dict[str, str], docker_api: str) -> None:
    env = {"TICKETING_TEST_INFRA": "containers", "DOCKER_HOST": docker_api, "TESTCONTAINERS_RYUK_DISABLED": "true",
           "CI": "true", "TICKETING_POSTGRES_IMAGE": images["POSTGRES_IMAGE"],
           "TICKETING_REDIS_IMAGE": images["REDIS_IMAGE"], "TICKETING_KAFKA_IMAGE": images["KAFKA_IMAGE"],
           # the database the postgres image makes for the tests, whatever this shell's tests use (a developer's
           # own TICKETING_TEST_DATABASE named a database the container does not have)
           "TICKETING_TEST_DATABASE": "ticketing_test"}
    proc = run([str(REPO / ".venv/bin/pytest"), "-p", "no:cacheprovider", *TESTS], env=env, timeout=900,
               check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    [header] = [line for line in out.splitlines() if line.startswith("infrastructure: testcontainers")]
    assert not any(f":{port}" in header for port in (5432, 6379, 9092)), header
    summary = proc.stdout.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and "failed" not in summary and "skipped" not in summary, summary
