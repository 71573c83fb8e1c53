"""Prometheus metrics shared by the library's moving parts (the service name is a label)."""

import warnings

from prometheus_client import Counter, Gauge
from prometheus_client.metrics import MetricWrapperBase

OUTBOX_PUBLISHED = Counter("ticketing_outbox_published_total", "Outbox rows acknowledged by Kafka", ["service"])
OUTBOX_PUBLISH_ERRORS = Counter("ticketing_outbox_publish_errors_total", "Failed relay batches", ["service"])
OUTBOX_LAG_SECONDS = Gauge("ticketing_outbox_oldest_unpublished_seconds", "Age of the oldest unpublished row",
                           ["service"])
CONSUMED = Counter("ticketing_consumer_events_total", "Events consumed", ["consumer", "outcome"])
CONSUMER_RETRIES = Counter("ticketing_consumer_retries_total", "Handler attempts that failed and were retried",
                           ["consumer"])
OUTBOX_QUARANTINED = Counter("ticketing_outbox_quarantined_total", "Outbox rows Kafka refused for good, set aside",
                             ["service"])
OUTBOX_QUARANTINED_ROWS = Gauge("ticketing_outbox_quarantined_rows", "Outbox rows in quarantine now (replay them)",
                                ["service"])
CONSUMER_LAG = Gauge("ticketing_consumer_lag_messages",
                     "Messages on the partition not yet consumed (high watermark - position)",
                     ["consumer", "topic", "partition"])
OUTBOX_BACKLOG = Gauge("ticketing_outbox_backlog_rows", "Committed outbox rows waiting for the relay", ["service"])
DEAD_LETTERED = Counter("ticketing_consumer_dead_lettered_total", "Messages a consumer parked in <topic>.DLQ",
                        ["consumer", "topic"])
ROLE_UP = Gauge("ticketing_role_up", "1 for each role this process runs (api, relay, consumer, sweeper, ...)",
                ["service", "role"], multiprocess_mode="max")


def forget(label: str, *metrics: MetricWrapperBase) -> None:
    """The series of an entity that ended (a showtime's waiting room closed, a voucher no longer selling) taken off
    `metrics`, each labelled by that entity alone: a label per showtime or voucher would otherwise grow the
    process's /metrics for as long as it runs. prometheus_client cannot remove a series in its multiprocess mode
    (PROMETHEUS_MULTIPROC_DIR: an API with several workers); there the series stays until the processes restart
    (the client warns on every call; not repeated here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for metric in metrics:
            metric.remove(label)
