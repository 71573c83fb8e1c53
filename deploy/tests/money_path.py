"""On the stack `make up` started, after a sale: the money path runs first.

    .venv/bin/python deploy/tests/money_path.py SINCE    (deploy/tests/readme_path.sh runs it after the demo;
                                                           SINCE: the demo's start, as the logs write time)

- The programs a checkout goes through (MONEY_PATH) run at a higher CPU priority than the crowd's hold-api, each
  of their processes (uvicorn's workers too), where this user may raise a priority (root, or CAP_SYS_NICE);
  elsewhere `nice` runs them at the usual one, and this says so.
- payment-service extended the sale's holds at hold-service's door for the services (hold-api-internal),
  and none at the crowd's (hold-api): both programs' logs since SINCE.
Exit status 1 when make up does otherwise.
"""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "deploy/local/supervisord.conf"
MONEY_PATH = ("payment-api", "hold-api-internal", "voucher-api", "gateway-simulator")
CROWD = "hold-api"
EXTEND = "/holds/{hold_id}/extend"  # only payment-service extends a hold (its checkout)


def programs() -> configparser.ConfigParser:
    conf = configparser.ConfigParser(interpolation=None)
    conf.read(CONF)
    return conf


def processes(program: str) -> Iterator[int]:
    """The program's process and its children (uvicorn's workers)."""
    ctl = [str(ROOT / ".venv/bin/supervisorctl"), "-c", str(CONF), "pid", program]
    pid = int(subprocess.run(ctl, check=True, capture_output=True, text=True, cwd=ROOT).stdout.strip())
    yield pid
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    yield from (int(child) for child in children)


def niceness(pid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, pid)


def may_raise_priority() -> bool:
    try:
        os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0) - 1)
    except PermissionError:
        return False
    os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0) + 1)
    return True


def extensions(program: str, since: str, logs: Path = ROOT / "var/log") -> int:
    """The hold extensions the program answered since `since` (its access log, <logs>/<program>.log; cluster
    mode's are in its own directory)."""
    count = 0
    with open(logs / f"{program}.log", encoding="utf-8", errors="replace") as log:
        for line in log:
            if '"http.request"' not in line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("ts", "") >= since and entry.get("route") == EXTEND:
                count += 1
    return count


def main(since: str) -> int:
    failures = []
    crowd = {niceness(pid) for pid in processes(CROWD)}
    raised = may_raise_priority()
    for program in MONEY_PATH:
        assert programs()[f"program:{program}"]["command"].startswith("nice -n -"), program
        levels = {niceness(pid) for pid in processes(program)}
        print(f"money-path: {program} runs at nice {sorted(levels)}, {CROWD} at {sorted(crowd)}")
        if raised and not max(levels) < min(crowd):
            failures.append(f"{program} runs at nice {sorted(levels)}, not above {CROWD}'s {sorted(crowd)}")
    if not raised:
        print("money-path: this user may not raise a priority: every program runs at the usual one (as nice said)")
    inside, outside = extensions("hold-api-internal", since), extensions(CROWD, since)
    print(f"money-path: checkouts extended {inside} holds at hold-api-internal and {outside} at {CROWD} since {since}")
    if inside == 0 or outside != 0:
        failures.append("payment-service extended holds at the crowd's door, or at none")
    for failure in failures:
        print(f"money-path: FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
