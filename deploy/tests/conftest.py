"""Fixtures of the deployment tests (`make test-deploy`; `make test` runs them beside the main suite).

They need podman (installed by deploy/images/build.sh), the images (built once per session, cached by
content), helm (deploy/helm/tools.sh) and, for the helm command test, nothing of the native infrastructure:
every container runs against infrastructure containers of its own, so no test of another run is disturbed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Test modules import their helpers from deploy_support (pytest runs with --import-mode=importlib), and the
# cluster fault run drives the e2e journeys and the saga checker as the package tests.e2e.
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[2]))

from deploy_support import run


@pytest.fixture(scope="session")
def images() -> dict[str, str]:
    """IMAGE name -> the tag built from the current sources (APP_IMAGE, POSTGRES_IMAGE, ...)."""
    out = run(["deploy/images/build.sh"], timeout=1500).stdout
    return dict(line.split("=", 1) for line in out.split() if "=" in line)


@pytest.fixture(scope="session")
def helm() -> str:
    return run(["deploy/helm/tools.sh", "helm"], timeout=1500).stdout.strip()


@pytest.fixture(scope="session")
def promtool() -> str:
    return run(["deploy/helm/tools.sh", "promtool"], timeout=600).stdout.strip()
