"""The consumer's per-record retries (IdempotentConsumer.process) on an inbox that fails as told: a transient
error is retried for as long as it lasts, anything else `max_attempts` times (the transient ones counted), a
PoisonMessage not at all, and only those reach the DLQ."""

from __future__ import annotations

import asyncpg
import pytest
from aiokafka import ConsumerRecord
from ticketing.consumer import ConsumerConfig, IdempotentConsumer, PoisonMessage
from ticketing.dead_letter import DeadLetters
from ticketing.inbox import Inbox
from ticketing.metrics import CONSUMER_RETRIES

RECORD = ConsumerRecord("t", 0, 7, 0, 0, b"k", b"{}", None, 0, 2, ())


class ScriptedInbox(Inbox):
    """Raises its failures in turn, then applies."""

    def __init__(self, failures: list[BaseException]) -> None:
        super().__init__("c", None, lambda raw: raw, {}, {})  # type: ignore[arg-type,return-value]
        self.failures, self.attempts = failures, 0

    async def apply(self, record: ConsumerRecord) -> str:
        self.attempts += 1
        if self.failures:
            raise self.failures.pop(0)
        return "applied"


class KeptLetters(DeadLetters):
    def __init__(self) -> None:
        super().__init__("127.0.0.1:9", "c")
        self.sent: list[tuple[int, str]] = []

    async def send(self, record: ConsumerRecord, error: BaseException) -> None:
        self.sent.append((record.offset, repr(error)))


def consumer(failures: list[BaseException], max_attempts: int = 3) -> IdempotentConsumer:
    config = ConsumerConfig(name="retries-test", topics=["t"], bootstrap="127.0.0.1:9", decode=lambda raw: raw,  # type: ignore[arg-type,return-value]
                            handlers={}, max_attempts=max_attempts, backoff_initial=0.001, backoff_max=0.004)
    made = IdempotentConsumer(config, None)  # type: ignore[arg-type]
    made.inbox, made.dead_letters = ScriptedInbox(failures), KeptLetters()
    return made


def retries() -> float:
    return CONSUMER_RETRIES.labels("retries-test")._value.get()


@pytest.mark.parametrize("transient", [ConnectionRefusedError("refused"), TimeoutError(),
                                       asyncpg.CannotConnectNowError("starting up")])
async def test_a_transient_error_is_retried_past_max_attempts_and_never_dead_lettered(transient: Exception) -> None:
    before, made = retries(), consumer([transient] * 7)
    await made.process(RECORD)
    assert made.inbox.attempts == 8 and made.dead_letters.sent == []  # type: ignore[attr-defined]
    assert retries() - before == 7


async def test_any_other_error_is_tried_max_attempts_times_then_dead_lettered() -> None:
    made = consumer([ValueError("bad 1"), ValueError("bad 2"), ValueError("bad 3"), ValueError("never raised")])
    await made.process(RECORD)
    assert made.inbox.attempts == 3 and made.dead_letters.sent == [(7, "ValueError('bad 3')")]  # type: ignore[attr-defined]


async def test_transient_failures_count_towards_max_attempts() -> None:
    made = consumer([OSError(), OSError(), KeyError("x"), KeyError("never raised")])
    await made.process(RECORD)
    assert made.inbox.attempts == 3 and made.dead_letters.sent == [(7, "KeyError('x')")]  # type: ignore[attr-defined]


async def test_a_poison_message_is_dead_lettered_at_once() -> None:
    made = consumer([PoisonMessage("undecodable")])
    await made.process(RECORD)
    assert made.inbox.attempts == 1 and made.dead_letters.sent == [(7, "PoisonMessage('undecodable')")]  # type: ignore[attr-defined]


async def test_a_record_that_recovers_is_applied_once_and_not_dead_lettered() -> None:
    made = consumer([ValueError("once")])
    await made.process(RECORD)
    assert made.inbox.attempts == 2 and made.dead_letters.sent == []  # type: ignore[attr-defined]
