"""The release's version is in one place (VERSION) and every copy agrees with it: the workspace packages (and so
`ticketing --version` and their installed metadata), uv.lock, the chart's version and appVersion, the
CHANGELOG's newest entry; `version.py set` writes every copy a person would otherwise forget."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def version_tool(root: Path = ROOT) -> Any:
    spec = importlib.util.spec_from_file_location("release_version", ROOT / "deploy" / "release" / "version.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if root != ROOT:
        module.ROOT, module.CHART = root, root / "deploy" / "helm" / "ticketing" / "Chart.yaml"
        module.PACKAGES = [root / p.relative_to(ROOT) for p in module.PACKAGES]
    return module


def test_every_copy_of_the_version_agrees_with_version() -> None:
    tool = version_tool()
    assert re.fullmatch(r"\d+\.\d+\.\d+", tool.release())
    assert tool.disagreements() == []
    assert len(tool.copies()) == 2 * len(tool.PACKAGES) + 3  # each package twice, the chart twice, the CHANGELOG
    out = subprocess.run([str(ROOT / ".venv" / "bin" / "ticketing"), "--version"], capture_output=True, text=True)
    assert out.stdout.split() == ["ticketing", tool.release()]
    for name in ("ticketing", "hold-service", "payment-service", "voucher-service", "notifier"):
        assert metadata.version(name) == tool.release(), name  # what the running services are


def test_a_copy_left_behind_is_caught_and_set_writes_them_all(tmp_path: Path) -> None:
    for path in ["VERSION", "CHANGELOG.md", "uv.lock", "deploy/helm/ticketing/Chart.yaml",
                 *[str(p.relative_to(ROOT)) for p in version_tool().PACKAGES]]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, tmp_path / path)
    tool = version_tool(tmp_path)
    chart = tool.CHART.read_text()
    tool.CHART.write_text(chart.replace(f'appVersion: "{tool.release()}"', 'appVersion: "0.0.9"'))
    assert [line.split(":")[0] for line in tool.disagreements()] == ["Chart.yaml appVersion"]

    tool.set_version("7.8.9")
    left = tool.disagreements()
    assert all(line.startswith(("uv.lock", "CHANGELOG.md")) for line in left), left  # `uv lock`, and a human
    assert tool.copies()["Chart.yaml version"] == tool.copies()["services/hold-service/pyproject.toml"] == "7.8.9"
