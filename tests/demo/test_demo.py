"""`make demo` at a small size, as `make test` runs it: the CLI starts a stack of its own (stack.py, the test
database, free ports, so it runs beside other tests; hold-service's limits as deployed), sells every seat, and its
CHECKED table passes, with the services' figures beside the customers' and the generator's own lag, and no
customer refused by address. (On `make up`: deploy/tests/readme_path.sh.)

    .venv/bin/pytest -p no:cacheprovider tests/demo/test_demo.py -q
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ("seats sold = capacity", "double sales = 0", "voucher uses <= limit", "every late payment refunded",
          "e-mails sent = bookings of known customers", "holds refused by address = 0",
          "tickets priced as the showtime prices", "cancelled bookings refunded once")
# 24 seats for 80 customers, a voucher of 3 uses, holds of 8 s: late payers and walk-aways play, and the
# seats they and the customers who cancel their bookings give back sell again within the limit (120 s: the sale
# ends at the sell-out, within 30 s on a quiet machine; the rest is for a busy one, where it takes 3 to 4 times
# as long).
SMALL = ["--platform", "own", "--customers", "80", "--showtimes", "2", "--seats", "12", "--voucher-limit", "3",
         "--seconds", "120", "--arrival-seconds", "2", "--hold-ttl", "8", "--plain", "--rest-timeout", "90"]


# Behind a room, a customer who leaves with a slot (he saw every seat held, and went) keeps it until his token
# lapses: 180 s as deployed. On a busy machine that once held a sale at 22 of 24 seats for about 170 s, seats free,
# customers queued, until those slots lapsed (a 372 s test in CI). Slots of 30 s, as the holds are 8 s, give them
# back within the sale's time.
SLOT_SECONDS = "30"


# With no operator action (--waiting-room auto) each showtime's room opens itself at the rush: thresholds low
# enough for 40 customers a showtime arriving within 2 s (20 new a minute; the active figure left out of it), 8
# choosing at once as behind the operator's rooms, closed 5 s after the rush is over (the arrivals of the last
# minute under 20 again: about a minute after the sale opened), looked at every second.
AUTO_ROOM = {"WAITING_ROOM_AUTO_OPEN_AT_ARRIVALS_PER_MINUTE": "20", "WAITING_ROOM_AUTO_OPEN_AT_ACTIVE": "100000",
             "WAITING_ROOM_AUTO_ACTIVE_LIMIT": "8", "WAITING_ROOM_AUTO_CLOSE_AFTER_SECONDS": "5",
             "WAITING_ROOM_AUTO_CHECK_SECONDS": "1", "WAITING_ROOM_AUTO_DEFAULT": "true"}


def run_demo(args: list[str], timeout: float,
             env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The demo in a process group of its own: however it ends (its timeout, the test's, an interrupt), the
    stack it started goes with it, and no service of it is left working on this worker's database."""
    env = {**os.environ, "COLUMNS": "160", "ADMISSION_TOKEN_TTL_SECONDS": SLOT_SECONDS,  # its stack inherits them
           **(env_extra or {})}
    demo = subprocess.Popen([sys.executable, "-m", "tests.demo", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = demo.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(demo.pid, signal.SIGKILL)
        demo.wait()
    return subprocess.CompletedProcess(demo.args, demo.returncode, out, err)


@pytest.mark.timeout(600)  # the sale ends at the sell-out; the rest is for a busy machine
@pytest.mark.parametrize("room", ["", "on", "auto"],
                         ids=["open sale", "behind waiting rooms", "rooms that open themselves"])
def test_make_demo_sells_out_and_its_table_passes(tmp_path: Path, kafka_bootstrap: str, redis_url: str,
                                                  room: str) -> None:
    report = tmp_path / "report.json"
    # Behind a room 8 customers choose at a time, so the sale takes longer (about 40 s on a quiet machine); it
    # still ends at the sell-out, so the longer limit costs time only on a busy machine.
    flags = {"": [], "on": ["--waiting-room", "--active-limit", "8", "--seconds", "300"],
             "auto": ["--waiting-room", "auto", "--seconds", "300"]}[room]
    run = run_demo([*SMALL, *flags, "--report", str(report)], timeout=540,
                   env_extra=AUTO_ROOM if room == "auto" else None)
    print(run.stdout[-6000:], run.stderr[-3000:])
    failed = [r for r in json.loads(report.read_text())["rows"] if r["ok"] is False] if report.exists() else []
    assert run.returncode == 0, (f"make demo exited {run.returncode}; failed rows: {failed}\n{run.stdout[-4000:]}\n"
                                 f"{run.stderr[-2000:]}")
    table = json.loads(report.read_text())
    rows = {r["check"]: r for r in table["rows"]}
    assert table["passed"]
    cancellation = rows["cancelled bookings refunded once"]
    for name in CHECKS:
        # No booking cancelled (none of the part's customers got one before the sell-out: seen once in CI on a busy
        # machine) leaves that row a figure, not a check (cancellations themselves: test_cancellations.py, R19).
        assert rows[name]["ok"] is True or (rows[name] is cancellation and cancellation["ok"] is None
                                            and cancellation["figure"].startswith("no booking cancelled")), rows[name]
    assert any(name.startswith("every saga invariant") and r["ok"] for name, r in rows.items())
    assert rows["seats sold = capacity"]["figure"].startswith("24 / 24 (sold out after ")
    facts = table["facts"]
    assert facts["sold_out"] and facts["hold_ttl_s"] <= 8
    assert set(facts["parts"]) == {"pays", "pays twice", "declines, retries", "pays late", "abandons",
                                   "cancels booking"}
    # Customers bought other ticket types than ADULT, and some cancelled their bookings while the sale went
    # on: refunded once, their seats back on sale and sold again (the sale still sold out).
    assert any(kind in rows["tickets priced as the showtime prices"]["figure"] for kind in ("CHILD", "SENIOR",
                                                                                             "STUDENT"))
    given_back = re.search(r"\((\d+) by their customers\).* their (\d+) seats back on sale, (\d+) sold again, "
                           r"0 still theirs", cancellation["figure"])
    assert cancellation["ok"] is None or (given_back and int(given_back[1]) >= 1 and given_back[2] == given_back[3]), \
        cancellation
    assert "no late payer" not in rows["every late payment refunded"]["figure"]  # they played
    assert {"seat_map", "hold", "hold_best", "checkout"} <= set(table["steps"])
    # A share of the customers asked for the best seats available: their 409s per booking beside the pickers'.
    # Behind a room of 8 they may book none: in a landing run they met 28 409s and booked nothing, while the pickers
    # of single seats booked 18 (a figure, not a check, as the row says).
    best = rows["409s per booking, best available vs picking"]
    booked = r"[1-9]\d*" if room == "" else r"\d+"
    assert best["ok"] is None and re.match(rf"best available ([\d.]+|-) \(\d+ 409s / {booked} bookings\) vs picking ",
                                           best["figure"]), best
    assert all(s["p99_ms"] >= s["p50_ms"] > 0 for s in table["steps"].values())
    # The services' own figures beside the customers', read from their /metrics over the sale.
    assert {"seat_map", "hold", "checkout"} <= set(table["server"])
    assert all(s["count"] > 0 and s["p99_le_ms"] >= s["p50_le_ms"] > 0 for s in table["server"].values())
    # The customers played in one process per core, each reporting its event loop's lag.
    assert facts["processes"] == len(os.sched_getaffinity(0)) == len(facts["loop_lag"])
    assert rows["load generator"]["ok"] is None and "event-loop lag" in rows["load generator"]["figure"]
    # hold-service ran its limits as deployed; the customers came a few to each address, none refused by it.
    assert (facts["addresses"], facts["customers_per_address"]) == (20, 4)
    assert facts["refused_by_limit"]["address"] == 0
    if room:  # every showtime's room let customers in, a few at a time (the operator's figures); a room that
        # opened itself only once the rush had come may find the seats already taken by those who came before it,
        # and then rightly admits nobody (a CI run's room opened 8 s in and ended with its showtime sold out, 22
        # customers in its queue and none admitted)
        assert set(facts["rooms"]) == {str(s) for s in facts["showtimes"]}
        assert all((r["admittedTotal"] or 0) >= 1 or (room == "auto" and r["opened"] and r["soldOut"])
                   for r in facts["rooms"].values()), facts["rooms"]
    if room == "auto":  # nobody turned them on: each opened itself at the rush and closed after (the topic)
        opened = rows["waiting rooms opened themselves at the rush and closed after"]
        assert opened["ok"] is True and opened["figure"].count("closed (RUSH_OVER)") == 2, opened
        assert all(r["mode"] == "auto" and r["enabled"] is False for r in facts["rooms"].values()), facts["rooms"]
