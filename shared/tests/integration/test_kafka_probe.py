"""/readyz's Kafka check keeps one connection between probes and says plainly when the broker is away."""

import pytest
from ticketing.kafka import KafkaProbe
from ticketing_testing import free_port

pytestmark = pytest.mark.integration


async def test_probes_share_one_connection(kafka_bootstrap) -> None:
    probe = KafkaProbe(kafka_bootstrap)
    try:
        await probe()
        first = probe._admin
        for _ in range(20):
            await probe()
        assert probe._admin is first is not None  # no new connection per probe
    finally:
        await probe.close()


async def test_a_broker_that_does_not_answer_fails_the_probe_and_drops_the_connection() -> None:
    probe = KafkaProbe(f"127.0.0.1:{free_port()}", timeout=0.5)
    with pytest.raises(ConnectionError):
        await probe()
    assert probe._admin is None
