"""Claim, mark and quarantine: a batch's rows in Postgres, and how the broker's answers become marks.

Kafka refuses a row for good (over the producer's max_request_size, refused at enqueue, or over the topic's
max.message.bytes, refused by the broker; a topic name Kafka cannot have; headers that are not [name, text]
pairs): no retry can fix it, and before quarantine it stopped the relay for good. The row is quarantined:
kept unpublished with its error and time (`quarantined_at`, `quarantine_error`), logged as
action=outbox.quarantined at ERROR, counted in ticketing_outbox_quarantined_total, and skipped; the rows around it are
marked as usual, so none is sent twice. `ticketing outbox replay` puts it back in line once the cause is
fixed (a topic limit raised, the row mended); it then goes out before the rows held behind it. Only the
refusals in REFUSED_FOR_GOOD quarantine; anything else, unknown errors included, is a retry.

Per-key order around a quarantined row: the later rows of its key (same topic and message key) are held
back, unpublished, until the quarantined row is replayed and published (claim_batch leaves them out); every
other key goes on. Publishing past it would break the one promise consumers build on, per-key order:
booking-events is keyed by bookingId and its consumers apply a booking's events as a chain (hold-service's
SeatsHeld, then payment's CheckoutStarted and PaymentSucceeded, then BookingConfirmed). A consumer handed
BookingConfirmed without the SeatsHeld before it sees a gap it cannot tell from a lost event, and the
SeatsHeld replayed afterwards would arrive after the confirmation, as a stale event that a correct consumer
ignores (a stale event never undoes a later state), so it would be lost for good. Holding back delays one
booking until an operator acts, and shows: the counter, the quarantine gauge, and `ticketing outbox
quarantined` lists each quarantined row with the number of rows waiting behind it. To give a row up
instead, an operator marks it published by hand, knowing the consumers will never see it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

import asyncpg
from aiokafka.errors import OutOfOrderSequenceNumber

from ticketing.logs import log_action
from ticketing.metrics import OUTBOX_PUBLISHED, OUTBOX_QUARANTINED
from ticketing.outbox import QUERIES
from ticketing.relay.records import REFUSED_FOR_GOOD, describe, key_of
from ticketing.relay.sending import Sent, error_of

logger = logging.getLogger(__name__)


@dataclass
class BatchOutcome:
    claimed: int = 0
    # Rows not sent in this pass: behind a quarantined row, or behind a large row awaiting its answer.
    deferred: int = 0
    published: list[int] = field(default_factory=list)
    quarantined: list[tuple[asyncpg.Record, BaseException]] = field(default_factory=list)
    # The first retryable failure: its row and every row after it are left for the next pass.
    failure: BaseException | None = None
    # The broker refused a record: this producer's sequence of that partition has a gap.
    renew_producer: bool = False

    @property
    def clean(self) -> bool:
        """Every row acknowledged: the batch claimed after it may go out as it was claimed."""
        return self.claimed == len(self.published)


def settle(rows: list[asyncpg.Record], sent: list[tuple[asyncpg.Record, Sent]]) -> BatchOutcome:
    """Walk the batch in id order: mark the acknowledged rows, quarantine the refused ones (holding back
    the rest of their key), stop at the first retryable failure."""
    outcome = BatchOutcome(claimed=len(rows))
    held: set[tuple[str, str]] = set()
    errors = [(row, state, error_of(state)) for row, state in sent]  # every future's outcome retrieved
    for row, state, error in errors:
        if state is None:
            outcome.deferred += 1
        elif error is None:
            outcome.published.append(row["id"])
        elif held and key_of(row) in held:
            continue  # a later row of a quarantined key that did not get through: it waits behind it
        elif isinstance(error, REFUSED_FOR_GOOD):
            outcome.quarantined.append((row, error))
            held.add(key_of(row))
            outcome.renew_producer |= isinstance(state, asyncio.Future)
        elif outcome.renew_producer and isinstance(error, OutOfOrderSequenceNumber):
            continue  # refused only for coming after a refused record; a fresh producer sends it next pass
        else:
            outcome.failure = error
            break
    return outcome


async def claim(conn: asyncpg.Connection, service: str, limit: int, *, after: int = 0,
                marking: list[int] | None = None) -> list[asyncpg.Record]:
    """Up to `limit` rows in line, oldest first, with ids above `after`; the rows of `marking` (acknowledged)
    are marked published by the same statement."""
    rows = await conn.fetch(QUERIES.claim_batch, limit, after, marking or [])
    if marking:
        OUTBOX_PUBLISHED.labels(service).inc(len(marking))
    return list(rows)


async def mark(conn: asyncpg.Connection, service: str, published: list[int],
               quarantined: list[tuple[asyncpg.Record, BaseException]]) -> None:
    """Mark the acknowledged rows published and set the refused ones aside, in one transaction."""
    if quarantined:
        async with conn.transaction():
            await conn.execute(QUERIES.mark_published, published)
            await conn.execute(QUERIES.quarantine, [row["id"] for row, _ in quarantined],
                               [describe(exc) for _, exc in quarantined])
    elif published:
        await conn.execute(QUERIES.mark_published, published)
    OUTBOX_PUBLISHED.labels(service).inc(len(published))
    for row, exc in quarantined:  # after COMMIT: the log never names a row still in line
        OUTBOX_QUARANTINED.labels(service).inc()
        log_action(logger, "outbox.quarantined", f"Kafka refused outbox row {row['id']} for good",
                   level=logging.ERROR, outbox_id=row["id"], topic=row["topic"], key=row["message_key"],
                   error=describe(exc))
