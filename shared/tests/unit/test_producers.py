"""Every Kafka producer of the platform (the outbox relays, the dead-letter producers, voucher-service's
flash publisher, the DLQ replay command) waits for every in-sync replica and is idempotent: cluster mode's
topics keep three copies and refuse a write with fewer than two in sync, and a producer's own retries across a
broker's failure must not write a record twice."""

from __future__ import annotations

from pathlib import Path

from ticketing.kafka import idempotent_producer
from ticketing.testing import REPO_ROOT


def test_one_constructor_builds_every_producer() -> None:
    sources = [p for root in [REPO_ROOT / "shared" / "src", *(REPO_ROOT / "services").glob("*/src")]
               for p in root.rglob("*.py")]
    building = [p.relative_to(REPO_ROOT) for p in sources if "AIOKafkaProducer(" in p.read_text()]
    assert building == [Path("shared/src/ticketing/kafka.py")]
    uses = {p.relative_to(REPO_ROOT).parts[-1] for p in sources if "idempotent_producer(" in p.read_text()}
    assert {"sending.py", "dead_letter.py", "dlq.py", "publisher.py"} <= uses


async def test_it_waits_for_all_in_sync_replicas_and_is_idempotent() -> None:
    producer = idempotent_producer("127.0.0.1:1", client_id="check")
    try:
        assert producer._sender._acks == -1  # acks=all
        assert producer._txn_manager is not None  # aiokafka keeps sequence numbers only when idempotent
    finally:
        await producer.stop()
