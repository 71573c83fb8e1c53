"""Scenarios of docs/reliability.md: R14 (random journeys over the whole saga), R13 (workers paused with SIGSTOP
mid-flow), R7 (a consumer killed with -9 once) and R15 (booking-events rebuild every seat map), on every service as a
real process (stack.py), then the checker (saga/) over the four schemas, the topic, the gateway and the mail.

    .venv/bin/pytest -p no:cacheprovider tests/e2e/test_saga_journeys.py -q -s       # ~30 s of journeys
    JOURNEY_SEED=7 JOURNEY_CUSTOMERS=60 JOURNEY_SECONDS=900 \\
        .venv/bin/pytest -p no:cacheprovider tests/e2e/test_saga_journeys.py -q -s -o timeout=2400   # soak

The report (journeys, outcomes, invariants, violations) is printed and written next to the history
(var/log/tests/e2e-saga/<run>/); a failing run lists every violated invariant with examples.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from ticketing.events import BOOKING_EVENTS, BOOKING_EVENTS_DLQ, VOUCHER_RESERVED_DLQ
from ticketing_testing import env

from ..observability.rules import alert_expressions, dashboard_expressions, exported, metric_names
from .saga import Sources, check
from .saga.offsets import KafkaView
from .saga_run import RunConfig, describe, pause_figures, run_journeys
from .stack import Stack, Timings, start_stack

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

LOGS = Path(__file__).resolve().parents[2] / "var" / "log" / "tests" / "e2e-saga"
# Short enough that holds expire, sessions lapse and reconciliation settles many times within a run, long
# enough that most payments confirm in time on a busy 2-core machine. A checkout extends its hold to its
# session's end + the grace (at most HOLD_MAX after the hold was taken): the grace absorbs the nemesis'
# pauses and the restart of a killed consumer, so a payment accepted at the session's last second books.
FAST = Timings(hold_ttl=12, session_ttl=12, sweep_interval=1, reconcile_after=4, reconcile_interval=1,
               voucher_ttl=20, voucher_sweep_interval=1, hold_max=40, confirm_grace=15, min_session=3)


@pytest.fixture(scope="module")
def saga_stack(migrated_dsn: Any, kafka_bootstrap: str, redis_url: str,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    logs = LOGS / time.strftime("%Y%m%d-%H%M%S")
    with start_stack(migrated_dsn, bootstrap=kafka_bootstrap, redis_url=redis_url, jwt_secret=env("JWT_SECRET"),
                     mail_dir=tmp_path_factory.mktemp("saga-mail"), logs=logs, timings=FAST) as stack:
        yield stack


async def test_r14_random_journeys_keep_every_saga_invariant(saga_stack: Stack) -> None:
    cfg = RunConfig.from_env()
    async with KafkaView(saga_stack.bootstrap) as kafka:  # nothing of this run is older than these offsets
        start = {t: await kafka.end_offsets(t) for t in (BOOKING_EVENTS, BOOKING_EVENTS_DLQ, VOUCHER_RESERVED_DLQ)}
    result = await run_journeys(saga_stack, cfg)
    logs = saga_stack.procs["notifier-worker"].log_path.parent
    result.history.dump(logs / "history.jsonl")
    sources = Sources(dsn=saga_stack.dsn, hold_url=saga_stack.url["hold"], sim_url=saga_stack.url["sim"],
                      bootstrap=saga_stack.bootstrap, groups=saga_stack.consumer_groups(),
                      group_prefix=saga_stack.group_prefix, mail_dir=saga_stack.mail_dir, start_offsets=start,
                      sent_log=saga_stack.procs["notifier-worker"].log_path, jwt_secret=saga_stack.jwt_secret,
                      hold_max_seconds=FAST.hold_max, confirm_grace_seconds=FAST.confirm_grace)
    verdict = await check(result.scope, sources, result.history, rest_timeout=90)
    verdict.extra = {"stack_started_in_s": round(saga_stack.started_in, 1), "run": describe(cfg, result),
                     "nemesis": pause_figures(result.history)}
    report = verdict.report()
    (logs / "report.txt").write_text(verdict.report(samples=None) + "\n")
    print(report)
    assert result.history.journeys, "no journey ran"
    failed = ", ".join(f"{c.name} ({len(c.violations)})" for c in verdict.failed())
    assert not verdict.violations, f"{verdict.violations} violations of {len(verdict.failed())} of " \
                                   f"{len(verdict.checks)} invariants: {failed}\n{report}"


async def test_the_metrics_operators_rely_on_exist_and_moved(saga_stack: Stack) -> None:
    """After the journeys (this module's stack): every metric the alert rules and the dashboard name is
    exported by some process of the platform, and the ones counting what the run did have moved."""
    found = exported(saga_stack.metrics_urls())
    named = set().union(*map(metric_names, alert_expressions() + dashboard_expressions()))
    missing = named - found
    assert not missing, f"named by the rules or the dashboard, exported by no process: {sorted(missing)}"
    text = {url: httpx.get(url, timeout=10).text for url in saga_stack.metrics_urls()}
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for body in text.values() for family in text_string_to_metric_families(body) for s in family.samples}

    def total(name: str, **labels: str) -> float:
        return sum(v for (n, ls), v in samples.items()
                   if n == name and all(dict(ls).get(k) == want for k, want in labels.items()))

    assert total("ticketing_http_requests_total", service="hold-service", route="/showtimes/{showtime_id}/holds") > 0
    assert total("ticketing_hold_decisions_total", decided_by="postgres", outcome="admitted") > 0
    assert total("ticketing_consumer_events_total", outcome="applied") > 0
    assert total("ticketing_outbox_published_total") > 0
    assert total("ticketing_payment_refunds_total", outcome="issued") > 0
    assert total("ticketing_notifier_emails_sent_total") > 0
    assert total("ticketing_voucher_reservations_total", outcome="Reserved") > 0
