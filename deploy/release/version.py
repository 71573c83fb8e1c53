"""The release's version is VERSION at the repository's root; everything else that names it follows it.

    python3 deploy/release/version.py            print it, after checking that every copy agrees (exit 1 if not)
    python3 deploy/release/version.py set 0.3.0  write it everywhere (then `uv lock`, a CHANGELOG entry, a tag)

The copies: the version of every workspace package (pyproject.toml: what `ticketing --version` and the
packages' metadata report), uv.lock's record of them, and the chart's `version` and `appVersion` (the image tag
the chart deploys unless `image.tag` is set; `make images` tags the application image with it too). The
CHANGELOG's newest entry names it. Standard library only: it runs before any venv exists.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEMVER = re.compile(r"^\d+\.\d+\.\d+$")
PACKAGES = [ROOT / "pyproject.toml", ROOT / "shared" / "pyproject.toml", ROOT / "testing" / "pyproject.toml",
            *sorted((ROOT / "services").glob("*/pyproject.toml"))]
CHART = ROOT / "deploy" / "helm" / "ticketing" / "Chart.yaml"
PROJECT_VERSION = re.compile(r'^(version = ")([^"]+)(")', re.MULTILINE)
CHART_VERSION = re.compile(r'^(version: )"?([^"\n]+)"?()$', re.MULTILINE)
APP_VERSION = re.compile(r'^(appVersion: ")([^"]+)(")$', re.MULTILINE)


def release() -> str:
    return (ROOT / "VERSION").read_text().strip()


def _name(pyproject: Path) -> str:
    found = re.search(r'^name = "([^"]+)"', pyproject.read_text(), re.MULTILINE)
    assert found, pyproject
    return found.group(1)


def copies() -> dict[str, str]:
    """Where the version is written -> what is written there."""
    found: dict[str, str] = {}
    for pyproject in PACKAGES:
        match = PROJECT_VERSION.search(pyproject.read_text())
        found[str(pyproject.relative_to(ROOT))] = match.group(2) if match else "(none)"
    lock = (ROOT / "uv.lock").read_text()
    for pyproject in PACKAGES:
        match = re.search(rf'^\[\[package\]\]\nname = "{re.escape(_name(pyproject))}"\nversion = "([^"]+)"', lock,
                          re.MULTILINE)
        found[f"uv.lock: {_name(pyproject)}"] = match.group(1) if match else "(none)"
    chart = CHART.read_text()
    for label, pattern in (("version", CHART_VERSION), ("appVersion", APP_VERSION)):
        match = pattern.search(chart)
        found[f"Chart.yaml {label}"] = match.group(2) if match else "(none)"
    heading = re.search(r"^## \[?(\d+\.\d+\.\d+)\]?", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    found["CHANGELOG.md, newest entry"] = heading.group(1) if heading else "(none)"
    return found


def disagreements() -> list[str]:
    want = release()
    return [f"{where}: {have} (VERSION: {want})" for where, have in copies().items() if have != want]


def set_version(version: str) -> None:
    if not SEMVER.match(version):
        raise SystemExit(f"version: {version!r} is not MAJOR.MINOR.PATCH")
    (ROOT / "VERSION").write_text(version + "\n")
    for pyproject in PACKAGES:
        pyproject.write_text(PROJECT_VERSION.sub(rf"\g<1>{version}\g<3>", pyproject.read_text(), count=1))
    chart = CHART_VERSION.sub(rf"\g<1>{version}", CHART.read_text(), count=1)
    CHART.write_text(APP_VERSION.sub(rf'\g<1>{version}\g<3>', chart, count=1))
    print(f"version: {version} written; now `uv lock`, a `## [{version}]` entry in CHANGELOG.md, and after the "
          f"release commit `git tag v{version}`")


def main(argv: list[str]) -> int:
    if argv[:1] == ["set"] and len(argv) == 2:
        set_version(argv[1])
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    wrong = disagreements()
    for line in wrong:
        print(f"version: {line}", file=sys.stderr)
    print(release())
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
