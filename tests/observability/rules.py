"""The metrics the alert rules and the Grafana dashboard (deploy/observability) name, and the metrics a
running platform exports: so a test can say that every name an operator's rule or panel relies on exists."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families

FOLDER = Path(__file__).resolve().parents[2] / "deploy" / "observability"
ALERTS, DASHBOARD = FOLDER / "alerts.yaml", FOLDER / "grafana-dashboard.json"
# PromQL words that look like metric names.
_WORDS = {"sum", "rate", "increase", "deriv", "max", "min", "avg", "count", "histogram_quantile", "by", "and",
          "or", "unless", "without", "on", "ignoring", "offset", "topk", "bottomk", "abs", "irate", "delta"}


def alert_expressions() -> list[str]:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return [rule["expr"] for group in groups for rule in group["rules"]]


def dashboard_expressions() -> list[str]:
    return [t["expr"] for panel in json.loads(DASHBOARD.read_text())["panels"] for t in panel["targets"]]


def metric_names(expr: str) -> set[str]:
    """The metric names in a PromQL expression (label matchers, groupings and strings removed)."""
    bare = re.sub(r'"[^"]*"', "", expr)
    bare = re.sub(r"\{[^}]*\}", "", bare)
    bare = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", bare)
    bare = re.sub(r"\[[^\]]*\]", "", bare)
    return {w for w in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", bare) if w not in _WORDS and "_" in w}


def exported(urls: list[str]) -> set[str]:
    """Every metric the /metrics at `urls` declare, sampled or not yet (a labelled counter shows no sample
    until its first increment), under the names PromQL uses (counters with _total, histograms' _bucket...)."""
    names: set[str] = set()
    for url in urls:
        text = httpx.get(url, timeout=10).text
        for family in text_string_to_metric_families(text):
            names.add(family.name)
            if family.type == "counter":
                names.add(f"{family.name}_total")
            if family.type == "histogram":
                names.update(f"{family.name}{suffix}" for suffix in ("_bucket", "_sum", "_count"))
            names.update(sample.name for sample in family.samples)
    return names
