"""An outbox row as the keyword arguments of `producer.send`, or the reason Kafka could never take it."""

from __future__ import annotations

import functools
import re
from typing import Any

import asyncpg
import orjson
from aiokafka.errors import InvalidTopicError, MessageSizeTooLargeError, RecordListTooLargeError

# Kafka's rule for topic names; the broker answers INVALID_TOPIC_EXCEPTION to others, but only inside a
# metadata answer that aiokafka turns into a wait and a timeout, indistinguishable from a missing topic.
LEGAL_TOPIC = re.compile(r"(?!\.\.?$)[a-zA-Z0-9._-]{1,249}")


class UnpublishableRow(Exception):
    """The row cannot be made into a Kafka record at all (topic name, headers)."""


# Refusals that depend on the record alone: no retry, no fresh producer, no broker restart changes them.
REFUSED_FOR_GOOD: tuple[type[BaseException], ...] = (
    MessageSizeTooLargeError, RecordListTooLargeError, InvalidTopicError, UnpublishableRow)


def record(row: asyncpg.Record) -> dict[str, Any]:
    """The row as keyword arguments of `producer.send`; UnpublishableRow if Kafka could never take it."""
    topic = row["topic"]
    if not _legal_topic(topic):
        raise UnpublishableRow(f"{topic!r} is not a legal Kafka topic name")
    return {"topic": topic, "value": bytes(row["payload"]), "key": row["message_key"].encode(),
            "headers": _headers(row["headers"])}


def key_of(row: asyncpg.Record) -> tuple[str, str]:
    """What Kafka orders by: the topic and the message key (one partition)."""
    return row["topic"], row["message_key"]


def describe(exc: BaseException) -> str:
    """A refusal as the quarantine keeps it."""
    return f"{type(exc).__name__}: {exc}"[:1000]


@functools.lru_cache(maxsize=256)
def _legal_topic(topic: str) -> bool:
    return LEGAL_TOPIC.fullmatch(topic) is not None


def _headers(text: str) -> list[tuple[str, bytes]]:
    """The `headers` column ([[name, value], ...], as ticketing.outbox writes it) as Kafka headers."""
    pairs = orjson.loads(text)
    if type(pairs) is not list:
        raise UnpublishableRow(f"headers are not a list of [name, text] pairs: {text[:200]}")
    headers = []
    for pair in pairs:  # a plain loop: this runs for every event (a generator costs a little more)
        if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str or type(pair[1]) is not str:
            raise UnpublishableRow(f"headers are not a list of [name, text] pairs: {text[:200]}")
        headers.append((pair[0], pair[1].encode()))
    return headers
