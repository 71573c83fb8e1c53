"""What each application image holds (deploy/images/app/Containerfile): the production image (ticketing-app) has no
dev tool, the dev image (ticketing-app-dev) has them.

A probe run inside each image lists its installed distributions, its console scripts (the entry points), whether
the dev tools' packages can be imported, and the routes of every API it can build (an app is built without
opening anything: its lifespan does). The production image must hold no gateway simulator, no SMTP sink and no
test-control route (the simulator's /sim/...); the dev image adds exactly the dev-tools package's own. The images
are the ones the other deployment tests use (deploy/images/build.sh, cached by content), so this costs seconds.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from deploy_support import run

PROBE = """
import importlib, importlib.metadata as md, importlib.util, json
APPS = {"hold-service": "hold_service.entrypoints.api.app", "payment-service": "payment_service.entrypoints.api.app",
        "voucher-service": "voucher_service.entrypoints.api.app", "gateway-simulator": "gateway_simulator.app"}
routes = {name: sorted(importlib.import_module(module).get_application().openapi()["paths"])
          for name, module in APPS.items() if importlib.util.find_spec(module.split(".")[0]) is not None}
print(json.dumps({
    "distributions": sorted({d.metadata["Name"].lower() for d in md.distributions()}),
    "console_scripts": sorted({e.name for e in md.entry_points(group="console_scripts")}),
    "modules": {m: importlib.util.find_spec(m) is not None for m in ("gateway_simulator", "smtp_sink", "aiosmtpd")},
    "routes": routes,
}))
"""
DEV_TOOLS = {"gateway_simulator", "smtp_sink", "aiosmtpd"}
DEV_SCRIPTS = {"gateway-simulator", "smtp-sink"}
TEST_CONTROL = "/sim/"
# Never in either image: the test support and the test framework belong to the dev venv alone.
TEST_SUPPORT = {"ticketing-testing", "pytest", "testcontainers"}


def probe(image: str) -> dict[str, Any]:
    # No network: what an image holds is read, nothing is reached. APP_ENV=dev: the settings accept the default
    # secrets the apps are built with here.
    out = run(["podman", "run", "--rm", "--network", "none", "-e", "APP_ENV=dev", image, "python", "-c", PROBE],
              timeout=300).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def production(images: dict[str, str]) -> dict[str, Any]:
    return probe(images["APP_IMAGE"])


@pytest.fixture(scope="module")
def dev(images: dict[str, str]) -> dict[str, Any]:
    return probe(images["APP_DEV_IMAGE"])


def test_the_production_image_holds_no_simulator_no_smtp_sink_and_no_test_control_route(
        production: dict[str, Any]) -> None:
    assert {"ticketing", "hold-service", "payment-service", "voucher-service", "notifier"} <= set(
        production["distributions"])
    assert "ticketing-dev-tools" not in production["distributions"]
    assert not DEV_SCRIPTS & set(production["console_scripts"])
    assert "ticketing-run" in production["console_scripts"]
    assert production["modules"] == dict.fromkeys(sorted(DEV_TOOLS), False)
    assert set(production["routes"]) == {"hold-service", "payment-service", "voucher-service"}
    assert [(app, path) for app, paths in production["routes"].items() for path in paths
            if path.startswith(TEST_CONTROL)] == []
    assert not TEST_SUPPORT & set(production["distributions"])


def test_the_dev_image_is_the_production_image_and_the_dev_tools(production: dict[str, Any],
                                                                   dev: dict[str, Any]) -> None:
    added = set(dev["distributions"]) - set(production["distributions"])
    assert {"ticketing-dev-tools", "aiosmtpd"} <= added
    assert set(production["distributions"]) <= set(dev["distributions"])
    assert not TEST_SUPPORT & added
    assert DEV_SCRIPTS <= set(dev["console_scripts"])
    assert dev["modules"] == dict.fromkeys(sorted(DEV_TOOLS), True)
    assert any(path.startswith(TEST_CONTROL) for path in dev["routes"]["gateway-simulator"])
    assert {app: paths for app, paths in dev["routes"].items() if app != "gateway-simulator"} == production["routes"]


@pytest.mark.parametrize("argv", [["gateway-simulator", "api"], ["smtp-sink", "serve", "--dir", "/data/mail"]])
def test_the_launcher_refuses_a_dev_role_in_the_production_image_in_one_line(images: dict[str, str],
                                                                            argv: list[str]) -> None:
    refused = run(["podman", "run", "--rm", "--network", "none", images["APP_IMAGE"], "ticketing-run", *argv],
                  check=False, timeout=120)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.count("\n") == 1 and f"{argv[0]} is a dev tool, not in this image" in refused.stderr


def test_the_dev_image_runs_a_dev_role(images: dict[str, str]) -> None:
    # The sink runs until the signal that `timeout` sends after a few seconds (exit 124: it was still running).
    sink = run(["podman", "run", "--rm", "--network", "none", images["APP_DEV_IMAGE"], "timeout", "10",
                "ticketing-run", "smtp-sink", "serve", "--dir", "/tmp/mail"], check=False, timeout=120)
    assert sink.returncode == 124 and "smtp_sink.started" in sink.stdout + sink.stderr, sink.stderr
