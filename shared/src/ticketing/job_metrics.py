"""How the periodic jobs are watched: when each last succeeded, and how its runs ended (Prometheus).

Every periodic job of the platform (ticketing.runtime.periodic, the relay's outbox retention, the waiting
room's step) reports through a `JobWatch`:
- ticketing_periodic_job_last_success_timestamp_seconds{service, job_name}: unix time of its last successful run. It
  starts at the time the job started to be watched, so a job that never succeeds raises the same alert as
  one that stopped succeeding, three intervals after its process started;
- ticketing_periodic_job_runs_total{service, job_name, outcome}: outcome `success` or `failure`;
- ticketing_periodic_job_interval_seconds{service, job_name, schedule}: how often it runs. `fixed`: every interval,
  whatever happens (the alert: no success for three intervals); `on_demand`: only while there is work (the
  waiting room steps while customers wait), so no success for a while is not a fault by itself (its alert
  also needs failed runs).
The labels avoid `job`, the label Prometheus gives every scraped target. The gauges keep the highest value
of the processes behind one /metrics (prometheus_client's multiprocess mode, the APIs' uvicorn workers):
the latest success of any of them; a job running in several replicas is healthy while any of them succeeds.
deploy/observability/alerts.yaml has the rules, docs/operations.md ("Periodic jobs") what to do.
"""

from __future__ import annotations

import time
from typing import Literal

from prometheus_client import Counter, Gauge

LAST_SUCCESS = Gauge("ticketing_periodic_job_last_success_timestamp_seconds",
                     "Unix time of the job's last successful run (its start until then)", ["service", "job_name"],
                     multiprocess_mode="max")
RUNS = Counter("ticketing_periodic_job_runs_total", "Runs of the periodic job by outcome (success, failure)",
               ["service", "job_name", "outcome"])
INTERVAL = Gauge("ticketing_periodic_job_interval_seconds",
                 "How often the periodic job runs (schedule: fixed | on_demand)", ["service", "job_name", "schedule"],
                 multiprocess_mode="max")

Schedule = Literal["fixed", "on_demand"]


class JobWatch:
    """One job's metrics, in one process."""

    def __init__(self, service: str, name: str, interval_seconds: float, schedule: Schedule = "fixed") -> None:
        self.service, self.name = service, name
        INTERVAL.labels(service, name, schedule).set(interval_seconds)
        LAST_SUCCESS.labels(service, name).set(time.time())
        for outcome in ("success", "failure"):  # both series exist from the start (rate() over them works)
            RUNS.labels(service, name, outcome)

    def succeeded(self) -> None:
        RUNS.labels(self.service, self.name, "success").inc()
        LAST_SUCCESS.labels(self.service, self.name).set(time.time())

    def failed(self) -> None:
        RUNS.labels(self.service, self.name, "failure").inc()
