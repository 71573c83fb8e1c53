"""The previous release keeps working on the schema this release migrates: what an upgrade needs, since
`helm upgrade` runs the new migrations first and the previous release's pods serve on the migrated schema until
the rollout replaces them (and again after a `helm rollback`, which undoes no migration; docs/deployment.md,
"Upgrades and rollbacks").

The previous release's code comes from git (`git archive` of the tag v0.1.0, or its commit d31ccf5 before the
tag exists): this test needs the repository's history, so a shallow clone fails it with the command that
fetches it (never a skip). Its schema files (every `sql/migrations` folder and `sql/schema.sql`) are replaced by
this release's, a database is migrated by this release's `deploy/local/migrate.sh --fresh`, and the previous
release's own tests of a booking's journey run against it, in a process that imports the previous release's
packages (PYTHONPATH before the workspace's editable installs): holds, their expiry and confirmation by the
payment, cancellation, what's on and my bookings, the door, the payment saga and voucher uses, and the events
they write decoded by the previous release's strict catalogue.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from ticketing_testing import BASE_TEST_DATABASE, REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.serial]

PREVIOUS_TAG, PREVIOUS_COMMIT = "v0.1.0", "d31ccf5"
HOLD = "services/hold-service/tests/integration"
JOURNEY = [f"{HOLD}/test_holds_api.py", f"{HOLD}/test_expiry_and_confirm.py", f"{HOLD}/test_cancellations.py",
           f"{HOLD}/test_catalogue_and_bookings.py", f"{HOLD}/test_door.py",
           "services/payment-service/tests/integration/test_saga.py",
           "services/voucher-service/tests/integration/test_booking_saga.py"]


def git(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, timeout=120)


def previous_release(into: Path) -> str:
    """The previous release's files, from git; its name."""
    tagged = git("rev-parse", "--verify", "-q", f"{PREVIOUS_TAG}^{{commit}}").returncode == 0
    ref = PREVIOUS_TAG if tagged else PREVIOUS_COMMIT
    archive = git("archive", "--format=tar", ref)
    assert archive.returncode == 0, (
        f"the previous release {ref} is not in this clone's history ({archive.stderr.decode().strip()}): "
        "this test needs it; fetch it with `git fetch --unshallow --tags` (CI: a checkout with fetch-depth: 0)")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return ref


def schema_files(root: Path) -> list[Path]:
    """What makes a service's schema: its migrations and its functions (sql/schema.sql)."""
    return sorted([*root.glob("shared/src/*/sql/migrations"), *root.glob("services/*/src/*/sql/migrations"),
                   *root.glob("services/*/src/*/sql/schema.sql")])


def dotenv() -> dict[str, str]:
    """The local stack's settings (.env: database roles, secrets), given to the old process as its environment."""
    path = REPO_ROOT / ".env"
    lines = path.read_text().splitlines() if path.exists() else []
    pairs = (line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    return {k.strip(): v.strip().strip('"').strip("'") for k, v in pairs}


def test_the_previous_release_runs_a_booking_journey_on_this_release_s_schema(tmp_path: Path) -> None:
    old = tmp_path / "previous"
    ref = previous_release(old)
    for new in schema_files(REPO_ROOT):  # this release's schema under the previous release's code
        target = old / new.relative_to(REPO_ROOT)
        if target.is_dir():
            shutil.rmtree(target)
        (shutil.copytree if new.is_dir() else shutil.copy)(new, target)
    database = f"{BASE_TEST_DATABASE}_previous"
    migrated = subprocess.run([str(REPO_ROOT / "deploy" / "local" / "migrate.sh"), "--fresh", database],
                              cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert migrated.returncode == 0, migrated.stderr[-2000:]

    sources = [old / "shared" / "src", old / "testing" / "src", *sorted(old.glob("services/*/src"))]
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}  # a run of its own
    environment = {**dotenv(), **inherited, "TICKETING_TEST_DATABASE": database,
                   "PYTHONPATH": os.pathsep.join(str(p) for p in sources), "PYTHONDONTWRITEBYTECODE": "1"}
    probe = subprocess.run([sys.executable, "-c", "import hold_service, ticketing; print(hold_service.__file__, "
                            "ticketing.__file__)"], cwd=old, env=environment, capture_output=True, text=True)
    assert probe.stdout.split() and all(p.startswith(str(old)) for p in probe.stdout.split()), probe
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *JOURNEY],
                         cwd=old, env=environment, capture_output=True, text=True, timeout=1500)
    assert run.returncode == 0, f"{ref} on this release's schema:\n{run.stdout[-6000:]}\n{run.stderr[-2000:]}"
    assert " passed" in run.stdout and " skipped" not in run.stdout.splitlines()[-1], run.stdout[-2000:]
