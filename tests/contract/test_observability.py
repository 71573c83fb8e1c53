"""The alert rules and the dashboard (deploy/observability) are valid PromQL (promtool, Prometheus' own
checker) and name only our metrics; tests/e2e/test_saga_journeys.py checks those metrics exist."""

import json
import shutil
import subprocess
from pathlib import Path

import yaml
from ticketing.testing import REPO_ROOT, require

from ..observability.rules import ALERTS, alert_expressions, dashboard_expressions, metric_names

PROMTOOL = shutil.which("promtool")


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
    assert metric_names('sum by (service) (rate(http_requests_total{status=~"5.."}[5m])) > 0.01') == \
        {"http_requests_total"}
    names = set().union(*map(metric_names, alert_expressions() + dashboard_expressions()))
    assert {"outbox_oldest_unpublished_seconds", "consumer_lag_messages", "consumer_dead_lettered_total",
            "payment_money_unresolved", "hold_decisions_total"} <= names
    dashboard = json.loads((REPO_ROOT / "deploy" / "observability" / "grafana-dashboard.json").read_text())
    assert dashboard["uid"] and all(p["targets"] for p in dashboard["panels"])
