"""The alert rules and the dashboard (deploy/observability) are valid PromQL (promtool, Prometheus' own
checker), name only our metrics, and fire when they should (`promtool test rules`);
tests/e2e/test_saga_journeys.py checks those metrics exist. Every metric the code registers is named under
`ticketing_` with a base unit."""

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml
from hold_service.entrypoints import worker as hold_worker
from notifier.entrypoints import worker as notifier_worker
from payment_service.entrypoints import worker as payment_worker
from ticketing_testing import REPO_ROOT, require
from voucher_service.entrypoints import worker as voucher_worker

from ..observability.rules import ALERTS, alert_expressions, dashboard_expressions, metric_names

PROMTOOL = shutil.which("promtool")
RULE_TESTS = Path(__file__).resolve().parents[1] / "observability" / "alerts_test.yaml"
# Every role of the platform: each service's API and its worker's roles (the notifier has no API).
ROLES = {("hold-service", "api"), ("payment-service", "api"), ("voucher-service", "api"),
         *(("hold-service", r) for r in hold_worker.ALL_ROLES),
         *(("payment-service", r) for r in payment_worker.ALL_ROLES),
         *(("voucher-service", r) for r in voucher_worker.ALL_ROLES),
         *(("notifier", r) for r in notifier_worker.ROLES)}


def _rule(name: str) -> dict:  # type: ignore[type-arg]
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return next(rule for group in groups for rule in group["rules"] if rule.get("alert") == name)


def _absent_roles() -> set[tuple[str, str]]:
    found = re.findall(r'absent\(ticketing_role_up\{service="([^"]+)", role="([^"]+)"\}\)',
                       _rule("RoleNotReporting")["expr"])
    return set(found)


def test_the_alert_rules_fire_when_they_should() -> None:
    require("promtool", PROMTOOL is not None, "run `make contract-tools`")
    out = subprocess.run([PROMTOOL, "test", "rules", str(RULE_TESTS)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_an_alert_fires_for_each_role_no_instance_of_which_reports(tmp_path: Path) -> None:
    """RoleNotReporting names every role of the platform; with every other role reporting and that one
    silent for five minutes, it fires with the role's labels (and not before)."""
    require("promtool", PROMTOOL is not None, "run `make contract-tools`")
    assert _absent_roles() == ROLES
    rule = _rule("RoleNotReporting")
    tests = []
    for service, role in sorted(ROLES):
        series = [{"series": f'ticketing_role_up{{service="{s}",role="{r}",instance="i",job="pods"}}',
                   "values": "1x10"} for s, r in sorted(ROLES) if (s, r) != (service, role)]
        tests.append({"interval": "1m", "input_series": series, "alert_rule_test": [
            {"eval_time": "4m", "alertname": "RoleNotReporting", "exp_alerts": []},
            {"eval_time": "6m", "alertname": "RoleNotReporting", "exp_alerts": [{
                "exp_labels": {**rule["labels"], "service": service, "role": role},
                "exp_annotations": {"summary": f"no {service} {role} reports metrics",
                                    "runbook": rule["annotations"]["runbook"]}}]}]})
    path = tmp_path / "roles_test.yaml"
    path.write_text(yaml.safe_dump({"rule_files": [str(ALERTS)], "evaluation_interval": "1m", "tests": tests}))
    out = subprocess.run([PROMTOOL, "test", "rules", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_alert_rules_pass_promtool() -> None:
    require("promtool", PROMTOOL is not None, "run `make contract-tools`")
    out = subprocess.run([PROMTOOL, "check", "rules", str(ALERTS)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_dashboard_query_is_valid_promql(tmp_path: Path) -> None:
    require("promtool", PROMTOOL is not None, "run `make contract-tools`")
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query:{n}", "expr": e} for n, e in enumerate(dashboard_expressions())]}]}
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump(rules))
    out = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_rules_and_panels_name_metrics() -> None:
    assert metric_names('sum by (service) (rate(ticketing_http_requests_total{status=~"5.."}[5m])) > 0.01') == \
        {"ticketing_http_requests_total"}
    names = set().union(*map(metric_names, alert_expressions() + dashboard_expressions()))
    assert {"ticketing_outbox_oldest_unpublished_seconds", "ticketing_consumer_lag_messages",
            "ticketing_consumer_dead_lettered_total", "ticketing_payment_money_unresolved",
            "ticketing_hold_decisions_total",
            "ticketing_periodic_job_last_success_timestamp_seconds", "ticketing_periodic_job_interval_seconds",
            "ticketing_periodic_job_runs_total", "ticketing_voucher_gate_drift", "ticketing_role_up"} <= names
    dashboard = json.loads((REPO_ROOT / "deploy" / "observability" / "grafana-dashboard.json").read_text())
    assert dashboard["uid"] and all(p["targets"] for p in dashboard["panels"])


REGISTERED = textwrap.dedent("""
    import importlib, pkgutil
    from prometheus_client import GC_COLLECTOR, PLATFORM_COLLECTOR, PROCESS_COLLECTOR, REGISTRY

    for default in (GC_COLLECTOR, PLATFORM_COLLECTOR, PROCESS_COLLECTOR):  # the client's own process_*, python_*
        REGISTRY.unregister(default)
    for name in ("ticketing", "hold_service", "payment_service", "voucher_service", "notifier", "gateway_simulator"):
        package = importlib.import_module(name)
        for module in pkgutil.walk_packages(package.__path__, f"{name}."):
            if not module.name.endswith("__main__"):  # a process' entry point runs when imported
                importlib.import_module(module.name)
    for family in REGISTRY.collect():
        print(family.type, family.name)
""")


def test_every_metric_the_code_registers_is_under_ticketing_with_a_base_unit() -> None:
    """Every module of every service imported in a process of its own, then prometheus_client's registry listed
    (its own process and platform collectors left out): one namespace for an operator's queries, seconds and
    plain counts, never minutes or milliseconds (a counter's `_total` is added by the client)."""
    done = subprocess.run([sys.executable, "-c", REGISTERED], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    families = dict(reversed(line.split()) for line in done.stdout.splitlines())  # name -> type
    assert {"ticketing_http_requests", "ticketing_consumer_events", "ticketing_notifier_emails_sent",
            "ticketing_voucher_gate_drift", "ticketing_waiting_room_queue_length"} <= families.keys()
    assert [name for name in families if not name.startswith("ticketing_")] == []
    units = re.compile(r"_(minutes?|hours?|milliseconds?|ms|us|kb|mb|kilobytes|megabytes|per_minute)(_|$)")
    assert [name for name in families if units.search(name)] == []
