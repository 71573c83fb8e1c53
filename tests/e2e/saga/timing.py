"""The saga's timing rules (docs/saga.md): paying in time always books, and no hold outlives its maximum.

A checkout extends its hold to the payment session's end + the grace before the session exists, so a
payment the gateway accepted before its session ended must find its hold live when hold-service applies
it, unless that happens more than the grace after the session's end (then the old rule stands: BookingFailed,
refund; counted in the notes, not a violation). Times are the gateway's (when it took the money, when the
session ends: the simulator's sessions) and the topic's (when hold-service decided BookingFailed).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from .facts import Facts
from .scope import Sources
from .verdict import Check, by


def _when(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def paid_in_time_is_booked(facts: Facts, sources: Sources) -> Check:
    check = Check("timing.paid_in_time_booked", "no payment the gateway accepted within its session was refunded "
                                                "for lateness (hold expired) unless applied beyond the grace")
    failed = by(facts.of_type("BookingFailed"), "paymentId")
    grace = timedelta(seconds=sources.confirm_grace_seconds)
    for session in facts.sessions.values():
        paid_at, ends = _when(session.get("paidAt")), _when(session.get("expiresAt"))
        if session["status"] != "paid" or paid_at is None or ends is None or paid_at > ends:
            continue
        pid = session["reference"]
        late = [e for e in failed.get(pid, []) if (e.get("data") or {}).get("reason") == "HOLD_EXPIRED"]
        decided = min((_when(e["occurredAt"]) or ends for e in late), default=None)
        if decided is not None and decided > ends + grace:
            facts.notes.append(f"payment {pid} paid in time, applied {(decided - ends).total_seconds():.1f} s after "
                               f"its session ended (beyond the grace): refunded by design")
            continue
        check.expect(decided is None, f"payment {pid} paid at {paid_at.isoformat()}, before its session ended at "
                                      f"{ends.isoformat()}, but hold-service found its hold expired at "
                                      f"{decided and decided.isoformat()} (within the grace): refunded for lateness")
    return check


# hold-service decides a confirmation on its transaction's clock (now(): the hold not yet expired) but stamps
# BookingConfirmed's occurredAt when it writes the event (clock_timestamp()), after the statement's row locks: on a
# busy machine a few milliseconds later, so a hold booked at the last moment of its maximum shows a stamp past it.
STAMP_SLACK = timedelta(seconds=1)


def holds_end_within_their_maximum(facts: Facts, sources: Sources) -> Check:
    check = Check("timing.hold_max", "no hold outlived its creation + HOLD_MAX (its expiry, and its booking)")
    most = timedelta(seconds=sources.hold_max_seconds)
    confirmed: dict[str, Any] = {e["bookingId"]: e for e in facts.of_type("BookingConfirmed")}
    for b in facts.bookings.values():
        created = b["created_at"]
        check.expect(b["expires_at"] <= created + most, f"hold {b['hold_id']} created {created.isoformat()} "
                                                         f"expires {b['expires_at'].isoformat()}: past HOLD_MAX")
        if (event := confirmed.get(b["booking_id"])) is not None:
            booked = _when(event["occurredAt"])
            check.expect(booked is not None and booked <= created + most + STAMP_SLACK,
                         f"hold {b['hold_id']} created {created.isoformat()} booked at {event['occurredAt']}: "
                         f"past HOLD_MAX")
    return check
