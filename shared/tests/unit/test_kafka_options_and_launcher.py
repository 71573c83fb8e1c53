"""Kafka client security and topic layout from the settings, aligned configs read back before a topics Job ends,
the `ticketing-run` launcher, `/readyz?check=`."""

from __future__ import annotations

import contextlib
import io
import re
import ssl
from pathlib import Path
from types import SimpleNamespace

import pytest
from aiokafka.admin import NewTopic
from aiokafka.errors import KafkaError
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import ValidationError
from ticketing.api.app import build_app
from ticketing.kafka import client_options, create_missing, topic_layout, until_configs_read_back
from ticketing.launcher import command, main
from ticketing.settings import KafkaSettings
from ticketing.tokens import TokenVerifier


def settings(**values: object) -> KafkaSettings:
    return KafkaSettings(_env_file=None, **values)  # type: ignore[call-arg]


def test_plaintext_by_default() -> None:
    assert client_options("b:9092", settings()) == {"bootstrap_servers": "b:9092", "security_protocol": "PLAINTEXT"}


def test_sasl_ssl_gives_every_client_credentials_and_a_tls_context() -> None:
    options = client_options("b:9093", settings(kafka_security_protocol="SASL_SSL", kafka_sasl_username="hold",
                                                kafka_sasl_password="pw", kafka_ssl_check_hostname=False))
    assert (options["security_protocol"], options["sasl_mechanism"]) == ("SASL_SSL", "SCRAM-SHA-512")
    assert (options["sasl_plain_username"], options["sasl_plain_password"]) == ("hold", "pw")
    assert isinstance(options["ssl_context"], ssl.SSLContext) and not options["ssl_context"].check_hostname


def test_sasl_without_credentials_is_refused() -> None:
    with pytest.raises(ValidationError, match="KAFKA_SASL_USERNAME"):
        settings(kafka_security_protocol="SASL_PLAINTEXT")


def test_topic_layout_overrides_partitions_and_refuses_unknown_topics() -> None:
    assert topic_layout(settings(kafka_topic_partitions={"booking-events": 48}))["booking-events"] == 48
    with pytest.raises(ValueError, match="bookings"):
        topic_layout(settings(kafka_topic_partitions={"bookings": 3}))
    with pytest.raises(ValidationError, match="MIN_INSYNC"):
        settings(kafka_topic_replication_factor=1, kafka_topic_min_insync_replicas=2)


def test_launcher_runs_the_real_entrypoints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_HOST", "0.0.0.0")
    monkeypatch.setenv("HTTP_PORT", "9001")
    api = command("payment-service", "api", [])
    assert api[1:6] == ["-m", "uvicorn", "--factory", "payment_service.entrypoints.api.app:get_application",
                        "--host"] and api[6:9] == ["0.0.0.0", "--port", "9001"]
    assert "--no-proxy-headers" in api  # the app, not uvicorn, decides whose X-Forwarded-For to believe
    assert api[api.index("--http") + 1] == "ticketing.api.server:HeadLimitedHttpTools"  # 431 while reading
    assert command("voucher-service", "worker", ["--roles", "expiry"])[1:] == [
        "-m", "voucher_service.entrypoints.worker", "--roles", "expiry"]
    with pytest.raises(SystemExit):
        main(["notifier", "api"])  # the notifier has no API role
    assert command("smtp-sink", "serve", ["--dir", "/data/mail"])[1:] == ["-m", "smtp_sink", "--dir", "/data/mail"]
    assert command("gateway-simulator", "api", [])[1:] == ["-m", "gateway_simulator"]


def test_launcher_refuses_a_dev_role_where_the_dev_tools_are_not_installed(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from ticketing import launcher

    # The production image: the dev tools' packages cannot be found; every other package can.
    real_find_spec = launcher.importlib.util.find_spec
    monkeypatch.setattr(launcher.importlib.util, "find_spec",
                        lambda name: None if name in ("gateway_simulator", "smtp_sink") else real_find_spec(name))
    monkeypatch.setattr(launcher.os, "execvp", lambda *a: pytest.fail(f"exec {a}"))
    for argv in (["gateway-simulator", "api"], ["smtp-sink", "serve", "--dir", "/data/mail"]):
        assert main(argv) == launcher.NOT_IN_THIS_IMAGE == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{argv[0]} is a dev tool, not in this image" in err


def test_readyz_checks_only_what_the_probe_names() -> None:
    app: FastAPI = build_app(title="t", tokens=TokenVerifier("s" * 40), routers=[], max_body_bytes=65536)

    async def down() -> None:
        raise ConnectionError("kafka down")

    async def up() -> None:
        return None

    app.state.readiness_checks = {"postgres": up, "kafka": down}
    client = TestClient(app)
    assert client.get("/readyz").status_code == 503
    ready = client.get("/readyz", params={"check": "postgres"})
    assert ready.status_code == 200 and ready.json()["checks"] == {"postgres": "ok"}
    unknown = client.get("/readyz", params={"check": "redis"})
    assert unknown.status_code == 422 and unknown.json()["error"] == "VALIDATION_ERROR"


def test_migrate_retries_a_connection_that_fails_until_its_deadline(monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import psycopg
    from ticketing import launcher

    failures = [psycopg.OperationalError("failed to resolve host 'postgres'")] * 2
    applied: list[str] = []

    def apply(dsn: str, *folders: object) -> None:
        if failures:
            raise failures.pop()
        applied.append(dsn)

    monkeypatch.setattr(launcher, "ServiceSettings", lambda: type("S", (), {"database_url": "postgresql://x@pg/db"}))
    monkeypatch.setattr(launcher, "_postgres_answers", lambda dsn: True)
    monkeypatch.setattr(launcher, "apply_migrations", apply)
    monkeypatch.setattr(launcher, "package_migrations", lambda package: package)
    monkeypatch.setattr(launcher.time, "sleep", lambda s: None)
    assert launcher.migrate("hold_service", wait_seconds=60) == 0
    assert applied == ["postgresql://x@pg/db"]
    assert capsys.readouterr().err.count("retrying") == 2

    failures[:] = [psycopg.OperationalError("still down")] * 3
    with pytest.raises(psycopg.OperationalError):  # past the deadline the error is the command's answer
        launcher.migrate("hold_service", wait_seconds=-1)


def test_the_launcher_waits_for_a_dependency_until_it_answers_or_its_time_is_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from ticketing import launcher

    monkeypatch.setattr(launcher.time, "sleep", lambda s: None)
    answers = [False, False, True]
    launcher.wait_for("postgres", lambda: answers.pop(0), 60)
    assert answers == []
    with pytest.raises(SystemExit, match="postgres did not answer within 0s"):
        launcher.wait_for("postgres", lambda: False, 0)


def test_make_up_serves_every_api_through_the_launcher() -> None:
    """`make up` (supervisord) ran uvicorn itself, which believed X-Forwarded-For from 127.0.0.1: one header
    per request got round the per-address limit. Every API program now execs `ticketing-run <service> api`."""
    import configparser

    from ticketing_testing import REPO_ROOT

    conf = configparser.ConfigParser(interpolation=None)
    conf.read(REPO_ROOT / "deploy/local/supervisord.conf")
    programs = {name.removeprefix("program:"): conf[name]["command"].split()
                for name in conf.sections() if name.startswith("program:")}
    # the money path's CPU priority (`nice -n -10 <command>`, docs/operations.md) comes before the command
    programs = {name: argv[3:] if argv[0] == "nice" else argv for name, argv in programs.items()}
    apis = {name: argv for name, argv in programs.items() if "-api" in name}
    assert set(apis) == {"hold-api", "hold-api-internal", "payment-api", "voucher-api"}
    for name, argv in apis.items():
        assert argv[0] == ".venv/bin/ticketing-run" and argv[2] == "api", name
        assert argv[1] == {"hold-api": "hold-service", "hold-api-internal": "hold-service",
                           "payment-api": "payment-service", "voucher-api": "voucher-service"}[name]
    assert not any("uvicorn" in " ".join(argv) for argv in programs.values())


def test_make_up_runs_every_api_in_two_processes_whose_metrics_add_up() -> None:
    """In `make demo`'s sale, payment-api alone in one process answered checkouts in 5-10 s (p50): its one
    event loop got one share of the 2 cores among hold-api's two processes and the customers'. Every API runs
    two, and its /metrics adds both up through a multiprocess directory that `make up` empties at each start
    (left over, an earlier run's counts would be added in)."""
    import configparser
    import re

    from ticketing_testing import REPO_ROOT

    conf = configparser.ConfigParser(interpolation=None)
    conf.read(REPO_ROOT / "deploy/local/supervisord.conf")
    apps = (REPO_ROOT / "deploy/local/apps.sh").read_text().replace("\\\n", " ")  # continued lines joined
    emptied = re.search(r"rm -rf var/run/prometheus && mkdir -p (.*)", apps)
    assert emptied is not None
    made = set(emptied.group(1).split())
    for name in ("hold-api", "payment-api", "voucher-api"):
        program = conf[f"program:{name}"]
        argv = program["command"].split()
        assert argv[argv.index("--workers") + 1] == "2", name
        directory = re.search(r'PROMETHEUS_MULTIPROC_DIR="([^"]+)"', program["environment"])
        assert directory is not None and directory.group(1) in made, name


def test_the_kafka_image_never_makes_a_cluster_id_the_storage_tool_reads_as_an_option() -> None:
    # deploy/images/kafka/entrypoint.sh makes the cluster id at the first start. One that began with "-" (1 in 64 of
    # base64url ids) was taken by `kafka.tools.StorageTool format -t` for an option, and the broker exited.
    script = (Path(__file__).resolve().parents[3] / "deploy/images/kafka/entrypoint.sh").read_text()
    program = re.search(r"cluster_id=\"\$\{KAFKA_CLUSTER_ID:-\$\(python3 -c '(.+?)'\)\}\"", script, re.S)
    assert program, "entrypoint.sh no longer makes the cluster id with python3 -c"
    code = compile(program[1], "entrypoint.sh", "exec")
    ids = []
    for _ in range(3000):  # without the check, P(no id starting with "-") = (63/64) ** 3000, about 3e-21
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, {})
        ids.append(out.getvalue().strip())
    assert all(len(i) == 22 for i in ids) and len(set(ids)) == len(ids)
    assert not [i for i in ids if i.startswith("-")]


class LaggingBroker:
    """DescribeConfigs as a broker answers it just after an AlterConfigs: the old retention for `stale` reads."""

    def __init__(self, stale: int) -> None:
        self.stale, self.reads = stale, 0

    async def describe_configs(self, resources: list) -> list:
        self.reads += 1
        value = "86400000" if self.reads <= self.stale else "10800000"
        return [SimpleNamespace(resources=[(0, None, 2, r.name, [("retention.ms", value, False, 1, False, [])])
                                           for r in resources])]


async def test_aligning_returns_only_once_the_brokers_report_the_new_configs() -> None:
    broker = LaggingBroker(stale=3)
    await until_configs_read_back(broker, {"booking-events": {"retention.ms": "10800000"}})  # type: ignore[arg-type]
    assert broker.reads == 4


async def test_configs_never_read_back_fail_the_topics_job_by_name() -> None:
    with pytest.raises(KafkaError, match="old configs of booking-events"):
        await until_configs_read_back(LaggingBroker(stale=10**6), {"booking-events": {"retention.ms": "10800000"}},
                                      seconds=0.3)  # type: ignore[arg-type]


class Controller:
    """CreateTopics as the controller answers it: an error code per topic, none raised."""

    def __init__(self, codes: dict[str, int]) -> None:
        self.codes = codes

    async def create_topics(self, topics: list) -> SimpleNamespace:
        return SimpleNamespace(topic_errors=[(t.name, self.codes.get(t.name, 0), None) for t in topics])


async def test_only_the_topics_the_controller_made_count_as_created() -> None:
    asked = [NewTopic("booking-events", 1, 1), NewTopic("booking-events.DLQ", 1, 1)]
    assert await create_missing(Controller({"booking-events": 36}), asked) == ["booking-events.DLQ"]  # type: ignore[arg-type]
    with pytest.raises(KafkaError, match=r"create topic booking-events\.DLQ: PolicyViolationError"):
        await create_missing(Controller({"booking-events.DLQ": 44}), asked)  # type: ignore[arg-type]
