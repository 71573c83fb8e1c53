"""The chart's database part: the connection budget counts the sessions outside the pools (the seat map's LISTEN,
the relays' advisory lock) and refuses values over the server's limit; an HA PostgreSQL by CloudNativePG (a
Cluster with synchronous standbys) and its Pooler (PgBouncer, transaction mode, prepared statements kept), on
and off, rendered and linted; values-ha-postgres.yaml fits its own budget."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from deploy_support import CHART, CLUSTER_VALUES, EXTERNAL_VALUES, by_kind, render, run

BASE = ["--set", "jwt.existingSecret=ticketing-jwt", "--set", "contacts.existingSecret=ticketing-contacts"]
HA_VALUES = CHART / "values-ha-postgres.yaml"
HA = ["-f", str(EXTERNAL_VALUES), "-f", str(CLUSTER_VALUES), "-f", str(HA_VALUES)]


def refused(helm: str, *args: str) -> str:
    proc = run([helm, "template", "t", str(CHART), *BASE, *args], check=False)
    assert proc.returncode != 0, "the render should have stopped"
    return proc.stderr


def test_no_database_objects_by_default(helm: str) -> None:
    kinds = {m["kind"] for m in render(helm, *BASE)}
    assert not kinds & {"Cluster", "Pooler"}


def test_the_ha_values_render_a_synchronous_cluster_and_a_transaction_pooler_and_lint(helm: str) -> None:
    manifests = render(helm, *BASE, *HA)
    [cluster] = by_kind(manifests, "Cluster").values()
    assert cluster["apiVersion"] == "postgresql.cnpg.io/v1"
    assert cluster["metadata"]["name"] == "ticketing-db"
    assert cluster["spec"]["instances"] == 3
    assert cluster["spec"]["postgresql"]["synchronous"] == {"method": "any", "number": 1}
    assert cluster["spec"]["postgresql"]["parameters"]["max_connections"] == "400"
    [pooler] = by_kind(manifests, "Pooler").values()
    assert pooler["spec"]["cluster"]["name"] == "ticketing-db" and pooler["spec"]["type"] == "rw"
    assert pooler["spec"]["pgbouncer"]["poolMode"] == "transaction"
    assert pooler["spec"]["pgbouncer"]["parameters"]["max_prepared_statements"] == "200"
    run([helm, "lint", "--strict", str(CHART), *BASE, *HA])


def test_the_cluster_alone_without_its_pooler(helm: str) -> None:
    manifests = render(helm, *BASE, "--set", "database.cloudnativepg.enabled=true",
                       "--set-string", "database.cloudnativepg.parameters.max_connections=2000")
    assert by_kind(manifests, "Cluster") and not by_kind(manifests, "Pooler")


def test_the_budget_counts_the_sessions_outside_the_pools(helm: str) -> None:
    # Pools 1790 (test_helm_options), 44 seat-map feeds, 4 relays: 1838.
    render(helm, *BASE, "--set", "database.maxConnections=1838")
    assert "may open 1838 connections" in refused(helm, "--set", "database.maxConnections=1837")
    # Two processes per hold-service API pod: two feeds each.
    stderr = refused(helm, "--set", "services.hold-service.env.WEB_CONCURRENCY=2",
                     "--set", "database.maxConnections=2000")
    assert "may open 2762 connections" in stderr and "92 of them sessions of their own" in stderr


def test_an_over_budget_values_file_is_refused(helm: str, tmp_path: Path) -> None:
    # The arithmetic: 60 hold-service pods x 21 connections against a server of 300.
    values = tmp_path / "over.yaml"
    values.write_text(yaml.safe_dump({"database": {"maxConnections": 300},
                                      "services": {"hold-service": {"api": {"autoscaling": {"maxReplicas": 60}}}}}))
    stderr = refused(helm, "-f", str(values))
    assert "hold-service api 60 pods x 1 processes x 20 + 1 LISTEN" in stderr


def test_with_the_pooler_the_server_sees_the_poolers_pools_and_the_sessions(helm: str) -> None:
    # values-cluster.yaml lets hold-service's API grow to 60 pods and its internal API to 4: 64 feeds + 4 relays =
    # 68 sessions. 2 poolers x 4 roles x 40 + 68 = 388 within 400 - 10; a pool size of 50 makes 468.
    render(helm, *BASE, *HA)
    stderr = refused(helm, *HA, "--set", "database.cloudnativepg.pooler.defaultPoolSize=50")
    assert "maxConnections is 390 but the pods may open 468 connections" in stderr
    # The pools' sum must fit the poolers' client connections too.
    stderr = refused(helm, *HA, "--set", "database.cloudnativepg.pooler.maxClientConn=500")
    assert "the pooler takes 1000 client connections" in stderr


@pytest.mark.parametrize("bad", ["database.cloudnativepg.pooler.defaultPoolSize=0",
                                 "database.cloudnativepg.synchronous.method=all"])
def test_the_schema_refuses_nonsense(helm: str, bad: str) -> None:
    refused(helm, "--set", "database.cloudnativepg.enabled=true", "--set", bad)
