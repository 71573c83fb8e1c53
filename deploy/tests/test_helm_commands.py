"""Every container the chart renders runs, as rendered, in its image with podman and becomes ready (Jobs succeed).

A small kubelet: for each Job (in hook-weight order) and each Deployment of `helm template`, the container's
image, args and environment (its ConfigMap and Secret via envFrom, `env` values and secretKeyRefs) are
resolved from the rendered manifests plus the Secrets a cluster would already hold (the default values refer
to them: CloudNativePG-style `ticketing-db-<service>` and the like), and run with the pod's user, a read-only
root filesystem and a tmpfs /tmp. Readiness: the container's own readinessProbe (HTTP, on a published
loopback port) where it has one; a worker without HTTP is ready when it logged that its roles started, its
consumers joined their groups and its relay leads.

The containers reach infrastructure containers of their own (the project's postgres, redis and kafka images on
a podman network, under the names the values give), use the `ticketing_test` database with .env's roles and
passwords and a consumer-group prefix unique to the run: nothing of the native infrastructure or of another
test run is touched.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from deploy_support import DOTENV, by_kind, render, run

RUN = uuid.uuid4().hex[:8]
NETWORK = f"tkhelm{RUN}"
READY_TIMEOUT = 420.0  # 13 processes start at once on 2 shared cores


def dsn(role: str, password_key: str) -> str:
    return f"postgresql://{role}:{DOTENV[password_key]}@postgres:5432/ticketing_test"


# What the cluster holds before the install (names from values.yaml's secretRefs).
CLUSTER_SECRETS = {
    "ticketing-db-hold-service": {"uri": dsn("hold_service", "HOLD_DB_PASSWORD")},
    "ticketing-db-payment-service": {"uri": dsn("payment_service", "PAYMENT_DB_PASSWORD")},
    "ticketing-db-voucher-service": {"uri": dsn("voucher_service", "VOUCHER_DB_PASSWORD")},
    "ticketing-db-notifier": {"uri": dsn("notifier", "NOTIFIER_DB_PASSWORD")},
    "ticketing-redis": {"url": "redis://redis:6379/0"},
    "ticketing-stripe": {"webhook-secret": DOTENV["STRIPE_WEBHOOK_SECRET"], "api-key": DOTENV["STRIPE_API_KEY"]},
    "ticketing-qr": {"signing-key": DOTENV["QR_SIGNING_KEY"]},
}


def podman(*args: str, timeout: float = 300, check: bool = True) -> str:
    return run(["podman", *args], timeout=timeout, check=check).stdout.strip()


# What each infrastructure container's image checks for health (podman's OCI images keep no HEALTHCHECK).
INFRA_CHECKS = {f"{NETWORK}-postgres": ["pg_isready", "-q", "-h", "127.0.0.1", "-d", "ticketing"],
                f"{NETWORK}-redis": ["redis-cli", "ping"],
                f"{NETWORK}-kafka": ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9092"]}


def wait_until_serving(checks: dict[str, list[str]], timeout: float = 240) -> None:
    """Every container answers its check before the hooks run; one that stopped is started again once and its
    log kept for the failure message if it stops again."""
    pending, restarted = dict(checks), set()
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for name, check in list(pending.items()):
            state = podman("inspect", "--format", "{{.State.Status}}", name)
            if state != "running":
                assert name not in restarted, f"{name} stopped twice:\n{logs(name, 40)}"
                print(f"{name} {state} before serving; starting it again:\n{logs(name, 20)}")
                restarted.add(name)
                podman("start", name)
            elif run(["podman", "exec", name, *check], check=False, timeout=30).returncode == 0:
                del pending[name]
        time.sleep(1)
    assert not pending, {name: logs(name, 40) for name in pending}


@pytest.fixture(scope="module")
def infrastructure(images: dict[str, str]) -> Iterator[None]:
    podman("network", "create", NETWORK)
    passwords = [f"{k}={DOTENV[k]}" for k in ("HOLD_DB_PASSWORD", "PAYMENT_DB_PASSWORD", "VOUCHER_DB_PASSWORD",
                                              "NOTIFIER_DB_PASSWORD")]
    try:
        podman("run", "-d", "--name", f"{NETWORK}-postgres", "--network", NETWORK, "--network-alias", "postgres",
               *(a for p in passwords for a in ("-e", p)), images["POSTGRES_IMAGE"])
        podman("run", "-d", "--name", f"{NETWORK}-redis", "--network", NETWORK, "--network-alias", "redis",
               images["REDIS_IMAGE"])
        podman("run", "-d", "--name", f"{NETWORK}-kafka", "--network", NETWORK, "--network-alias", "kafka",
               "-e", "KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://kafka:9092", images["KAFKA_IMAGE"])
        wait_until_serving(INFRA_CHECKS)
        yield
    finally:
        names = podman("ps", "-a", "--format", "{{.Names}}", "--filter", f"name={NETWORK}").split()
        infra = [f"{NETWORK}-{n}" for n in ("postgres", "redis", "kafka")]
        for name in [n for n in names if n not in infra] + infra:  # the applications first, quietly
            podman("rm", "-f", "-t", "2", name, check=False)
        podman("network", "rm", "-f", NETWORK, check=False)


@pytest.fixture(scope="module")
def manifests(helm: str, images: dict[str, str]) -> list[dict[str, Any]]:
    repository, tag = images["APP_IMAGE"].rsplit(":", 1)
    return render(helm, "--set", f"image.repository={repository}", "--set", f"image.tag={tag}",
                  "--set", "image.pullPolicy=Never", "--set", "kafka.bootstrapServers=kafka:9092",
                  "--set", f"kafka.groupPrefix=helm-{RUN}-", "--set", "kafka.topics.replicationFactor=1",
                  "--set", "kafka.topics.minInsyncReplicas=1",
                  "--set", f"jwt.value={DOTENV['JWT_SECRET']}", "--set", f"contacts.value={DOTENV['CONTACTS_API_KEY']}",
                  "--set", "services.payment-service.stripeApiBase=http://stripe.invalid",
                  "--set", "services.notifier.env.SMTP_HOST=smtp.invalid")


def resolve_env(container: dict[str, Any], manifests: list[dict[str, Any]]) -> dict[str, str]:
    """The container's environment as the kubelet would build it (envFrom first, then env)."""
    config_maps, secrets = by_kind(manifests, "ConfigMap"), by_kind(manifests, "Secret")
    secret_data = {**CLUSTER_SECRETS, **{name: s["stringData"] for name, s in secrets.items()}}
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env.update(config_maps[source["configMapRef"]["name"]]["data"])
        else:
            env.update(secret_data[source["secretRef"]["name"]])
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = item["value"]
        else:
            ref = item["valueFrom"]["secretKeyRef"]
            env[item["name"]] = secret_data[ref["name"]][ref["key"]]
    return env


def podman_run_args(workload: dict[str, Any], container: dict[str, Any], env: dict[str, str]) -> list[str]:
    pod = workload["spec"]["template"]["spec"]
    user = f"{pod['securityContext']['runAsUser']}:{pod['securityContext']['runAsGroup']}"
    args = ["--network", NETWORK, "--user", user, "--tmpfs", "/tmp:rw,size=256m", "--cap-drop", "all",
            "--security-opt", "no-new-privileges"]
    if container["securityContext"].get("readOnlyRootFilesystem"):
        args.append("--read-only")
    for name, value in env.items():
        args += ["-e", f"{name}={value}"]
    return [*args, container["image"], *container["args"]]


def logs(name: str, tail: int | None = None) -> str:
    """The container's output, both streams (`podman logs` replays its stderr on stderr: tracebacks are there)."""
    proc = subprocess.run(["podman", "logs", *(["--tail", str(tail)] if tail else []), name],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    return proc.stdout.strip()


def worker_ready(name: str, roles: list[str]) -> bool:
    output = logs(name)
    wanted = ["runtime.started"]
    wanted += ["consumer.started"] * any(r.endswith("consumer") for r in roles)
    wanted += ["outbox.relay_leading"] * ("relay" in roles)
    return all(w in output for w in wanted)


def probe_ready(name: str, container: dict[str, Any]) -> bool:
    probe = container["readinessProbe"]["httpGet"]
    port = podman("port", name, str(container["ports"][0]["containerPort"])).rsplit(":", 1)[-1]
    try:
        return httpx.get(f"http://127.0.0.1:{port}{probe['path']}", timeout=3).status_code == 200
    except httpx.HTTPError:
        return False


def test_every_rendered_container_runs_and_becomes_ready(infrastructure: None,
                                                         manifests: list[dict[str, Any]]) -> None:
    jobs = sorted(by_kind(manifests, "Job").values(),
                  key=lambda j: int(j["metadata"]["annotations"]["helm.sh/hook-weight"]))
    for job in jobs:  # hooks, in order; each must succeed
        [container] = job["spec"]["template"]["spec"]["containers"]
        run(["podman", "run", "--rm", "--name", f"{NETWORK}-{job['metadata']['name']}",
             *podman_run_args(job, container, resolve_env(container, manifests))], timeout=300)

    started: dict[str, dict[str, Any]] = {}
    for name, deployment in by_kind(manifests, "Deployment").items():
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        publish = ["-p", f"127.0.0.1::{container['ports'][0]['containerPort']}"] if "ports" in container else []
        podman("run", "-d", "--name", f"{NETWORK}-{name}", *publish,
               *podman_run_args(deployment, container, resolve_env(container, manifests)))
        started[f"{NETWORK}-{name}"] = container
    assert len(started) == 14  # 4 APIs (hold-service's public and internal), 10 workers

    pending = dict(started)
    deadline = time.monotonic() + READY_TIMEOUT
    while pending and time.monotonic() < deadline:
        for name, container in list(pending.items()):
            state = podman("inspect", "--format", "{{.State.Status}}", name)
            assert state == "running", f"{name} stopped:\n{logs(name, 40)}"
            roles = container["args"][4].split(",") if "--roles" in container["args"] else []
            if probe_ready(name, container) if "readinessProbe" in container else worker_ready(name, roles):
                del pending[name]
        time.sleep(1)
    assert not pending, {name: logs(name, 20) for name in pending}
