"""The producer's side of the relay: its life, and a batch enqueued in id order and awaited.

A row refused by the broker (not at enqueue) must not be overtaken by the later rows of its key, and by the
time the broker answers they could be on their way. The broker refuses a record for its size only above the
topic's max.message.bytes (1 MiB by default, never set below LARGE_ROW_BYTES here), so the later rows of a
key are not sent in the same pass as a row of that key larger than LARGE_ROW_BYTES: they wait for the
broker's answer about it and go out in the next pass, right after it (or stay held back if it was
quarantined). Nearly all rows are small and pipelined. Relying on the idempotent producer instead would not
do: after a refused batch the broker turns away the producer's later batches of that partition
(OUT_OF_ORDER_SEQUENCE_NUMBER: a gap in the sequence numbers) only when it already holds a sequence of that
producer there, not when the refused record was the producer's first, as after a restart. Rows of other
keys turned away that way are sent again in the next pass, by a fresh producer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from aiokafka import AIOKafkaProducer

from ticketing.kafka import idempotent_producer
from ticketing.relay.records import REFUSED_FOR_GOOD, key_of, record

# Rows above this may be refused by the broker for their size, so the later rows of their key wait for its
# answer. aiokafka's batch size: a larger record travels alone in its batch.
LARGE_ROW_BYTES = 16 * 1024

# What became of one row's send: a delivery future, the exception that stopped it, or None (not sent now).
Sent = asyncio.Future[Any] | BaseException | None


@asynccontextmanager
async def started_producer(service: str, bootstrap: str, timeout: float) -> AsyncIterator[AIOKafkaProducer]:
    """An idempotent producer (acks=all) for as long as the block runs; stopped after it, whatever happens."""
    producer = idempotent_producer(bootstrap, client_id=f"{service}-relay")
    try:
        await asyncio.wait_for(producer.start(), timeout)
        yield producer
    finally:
        await producer.stop()


async def send(producer: Any, rows: list[asyncpg.Record], timeout: float) -> list[tuple[asyncpg.Record, Sent]]:
    """Enqueue the batch in id order and wait for the broker; each row with what became of it.

    A row refused at enqueue is not sent, nor are the later rows of its key, nor those of a large row's key
    (sent next pass); a retryable failure at enqueue stops the enqueueing there. Everything is bounded by
    `timeout`.
    """
    deadline = asyncio.get_running_loop().time() + timeout
    sent: list[tuple[asyncpg.Record, Sent]] = []
    waiting: set[tuple[str, str]] = set()  # keys whose later rows go next pass
    try:
        async with asyncio.timeout_at(deadline):
            for row in rows:
                if waiting and key_of(row) in waiting:  # `waiting and`: it is nearly always empty
                    sent.append((row, None))
                    continue
                try:
                    sent.append((row, await producer.send(**record(row))))
                    if len(row["payload"]) > LARGE_ROW_BYTES:
                        waiting.add(key_of(row))
                except REFUSED_FOR_GOOD as exc:
                    waiting.add(key_of(row))
                    sent.append((row, exc))
                except Exception as exc:
                    sent.append((row, exc))
                    break
    except TimeoutError as exc:
        if len(sent) < len(rows):  # the row being enqueued when time ran out (metadata wait, full buffer)
            sent.append((rows[len(sent)], exc))
    futures = [state for _, state in sent if isinstance(state, asyncio.Future)]
    if futures:
        await asyncio.wait(futures, timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
    return sent


def error_of(state: Sent) -> BaseException | None:
    """The exception a row's send ended with, None when the broker acknowledged it (or it was not sent)."""
    if state is None or isinstance(state, BaseException):
        return state
    if not state.done():
        return TimeoutError("not acknowledged within send_timeout")
    if state.cancelled():
        return asyncio.CancelledError()
    return state.exception()
