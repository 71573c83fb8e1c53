"""Helpers of the deployment tests (imported by name: conftest puts this folder on sys.path)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import yaml
from dotenv import dotenv_values

REPO = Path(__file__).resolve().parents[2]
DOTENV = {k: v for k, v in dotenv_values(REPO / ".env").items() if v is not None}


def run(args: list[str], *, timeout: float = 600, env: dict[str, str] | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command in the repository; on failure the assertion shows its output."""
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env={**os.environ, **(env or {})})
    if check:
        assert proc.returncode == 0, (f"{' '.join(args)} exited {proc.returncode}:\n"
                                      f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


CHART = REPO / "deploy" / "helm" / "ticketing"
EXTERNAL_VALUES = CHART / "values-external.yaml"
CLUSTER_VALUES = CHART / "values-cluster.yaml"  # on top of EXTERNAL_VALUES


def render(helm: str, *args: str, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """`helm template` of the chart (release `ticketing`) with extra arguments; the manifests, hooks included."""
    out = run([helm, "template", "ticketing", str(CHART), *args], env=env).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def by_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in manifests if m["kind"] == kind}


def containers(manifests: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(workload, container) for every Deployment and Job."""
    return [(m, c) for m in manifests if m["kind"] in ("Deployment", "Job")
            for c in m["spec"]["template"]["spec"]["containers"]]
