"""Every environment variable the chart (default, external and cluster values) and the compose file give an
application container is one its process reads, and every setting a deployment must set is set.

What a process reads: its service's pydantic Settings (field names, or their aliases), plus the launcher's
HTTP_HOST/HTTP_PORT for an API; `migrate` and `topics` read the shared ServiceSettings. What must be set:
every setting whose default only works on a developer's machine (a loopback address) and every secret that
production mode refuses at its default, except the shared base's addresses a component never uses.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from deploy_support import CLUSTER_VALUES, EXTERNAL_VALUES, REPO, by_kind, containers, render
from gateway_simulator.config import SimulatorSettings
from hold_service.config import HoldSettings
from notifier.config import NotifierSettings
from payment_service.config import Settings as PaymentSettings
from pydantic import AliasChoices
from pydantic_settings import BaseSettings
from ticketing.launcher import ApiSettings
from ticketing.settings import ServiceSettings
from voucher_service.config import VoucherSettings

SETTINGS: dict[str, type[ServiceSettings]] = {
    "hold-service": HoldSettings, "payment-service": PaymentSettings, "voucher-service": VoucherSettings,
    "notifier": NotifierSettings, "gateway-simulator": SimulatorSettings, "kafka": ServiceSettings}
# Fields of the shared base that these components never read (grep: no use outside config.py).
UNUSED = {"payment-service": {"redis_url", "redis_cluster_nodes"}, "notifier": {"redis_url", "redis_cluster_nodes"},
          "gateway-simulator": {"redis_url", "redis_cluster_nodes", "database_url", "kafka_bootstrap_servers"}}
IMAGE_ENV = {"PATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "HTTP_HOST", "FAUST_DATA_DIR"}


def env_names(settings: type[BaseSettings]) -> dict[str, str]:
    """Environment variable (upper case) -> field name."""
    names: dict[str, str] = {}
    for field, info in settings.model_fields.items():
        alias = info.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias] if isinstance(alias, str) else [field]
        names.update({str(choice).upper(): field for choice in choices})
    return names


def is_loopback(value: Any) -> bool:
    host = urlsplit(value).hostname if "://" in str(value) else str(value).rsplit(":", 1)[0]
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return host == "localhost"


def contract(component: str, role: str) -> tuple[set[str], set[str]]:
    """(what the process reads, what must be set) for `ticketing-run <component> <role>`. A required setting
    with several accepted names (DATABASE_URL or HOLD_DATABASE_URL) is one entry, its names joined by `|`."""
    if role in ("migrate", "topics"):
        return set(env_names(ServiceSettings)), {"DATABASE_URL"} if role == "migrate" else {"KAFKA_BOOTSTRAP_SERVERS"}
    settings = SETTINGS[component]
    reads = env_names(settings) | (env_names(ApiSettings) if role == "api" else {})
    local_only = {field for field, info in settings.model_fields.items() if is_loopback(info.default)}
    local_only -= UNUSED.get(component, set())
    if role != "worker":  # METRICS_HOST is where a worker's METRICS_PORT listens; an API serves /metrics itself
        local_only.discard("metrics_host")
    required = {"|".join(sorted(e for e, f in reads.items() if f == field)) for field in local_only}
    return set(reads), required | set(settings.model_construct().secrets())


def check(where: str, component: str, role: str, given: set[str]) -> None:
    reads, required = contract(component, role)
    unread = {name.upper() for name in given} - reads - IMAGE_ENV - ({"HTTP_PORT"} if role != "api" else set())
    assert not unread, f"{where}: {component} {role} is given {sorted(unread)} but never reads them"
    missing = [r for r in required if not set(r.split("|")) & (given | IMAGE_ENV)]
    assert not missing, f"{where}: {component} {role} needs {missing}"


VALUES = {"default": ["--set", "jwt.existingSecret=ticketing-jwt",
                      "--set", "contacts.existingSecret=ticketing-contacts"],
          "external": ["-f", str(EXTERNAL_VALUES)],
          "cluster": ["-f", str(EXTERNAL_VALUES), "-f", str(CLUSTER_VALUES)]}


@pytest.mark.parametrize("values", sorted(VALUES))
def test_chart_sets_only_what_services_read_and_all_they_need(helm: str, values: str) -> None:
    manifests = render(helm, *VALUES[values])
    config_maps, secrets = by_kind(manifests, "ConfigMap"), by_kind(manifests, "Secret")
    checked = 0
    for workload, container in containers(manifests):
        given = {e["name"] for e in container.get("env", [])}
        for source in container.get("envFrom", []):
            if "configMapRef" in source:
                given |= set(config_maps[source["configMapRef"]["name"]]["data"])
            else:
                given |= set(secrets[source["secretRef"]["name"]]["stringData"])
        _, component, role = container["args"][:3]
        check(f"{values} {workload['metadata']['name']}", component, role, given)
        checked += 1
    assert checked == 19  # 14 Deployments (hold-service's internal API too), 4 migration Jobs, the topic Job


def test_compose_sets_only_what_services_read_and_all_they_need() -> None:
    compose = yaml.safe_load((REPO / "deploy" / "compose" / "docker-compose.yml").read_text())
    checked = 0
    for name, service in compose["services"].items():
        command = service.get("command") or []
        if command[:1] != ["ticketing-run"] or command[1] == "smtp-sink":
            continue  # infrastructure images; the SMTP sink takes its argv only
        check(f"compose {name}", command[1], command[2], set(service.get("environment") or {}))
        checked += 1
    assert checked == 13
