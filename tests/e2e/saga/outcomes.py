"""How each booking and each journey ended, read from the databases (never from what callers were told)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .facts import Facts
from .history import History
from .verdict import payments_of


def booking_outcome(booking: dict[str, Any], payments: list[dict[str, Any]]) -> str:
    states = [p["status"] for p in payments]
    retried = any(s in ("FAILED", "EXPIRED") for s in states[:-1])
    if booking["status"] == "BOOKED":
        return "booked after a failed attempt" if retried else "booked"
    if "REFUNDED" in states:
        return "refunded"
    if "SUCCEEDED" in states:
        return "paid, not booked, not refunded"  # a violation, also counted by the invariants
    if "PENDING" in states:
        return "payment still pending"
    if booking["status"] == "RELEASED":
        return "cancelled" + (" after checkout" if payments else "")
    if booking["status"] == "EXPIRED":
        return "expired unpaid" if payments else "expired without checkout"
    return f"still {booking['status']}"


def outcomes(facts: Facts) -> dict[str, int]:
    paid = payments_of(facts)
    counts = Counter(booking_outcome(b, paid.get(k, [])) for k, b in facts.bookings.items())
    counts.update(f"payments {p['status']}" for p in facts.payments.values())
    counts["declined then retried"] = sum(
        1 for pays in paid.values() if any(p["status"] == "FAILED" for p in pays[:-1]))
    return dict(sorted(counts.items()))


def journey_table(history: History, facts: Facts) -> dict[str, dict[str, int]]:
    """scenario -> outcome -> journeys."""
    paid = payments_of(facts)
    table: dict[str, Counter[str]] = {}
    for j in history.journeys.values():
        b = facts.bookings.get(j.booking_id or "")
        outcome = booking_outcome(b, paid.get(b["booking_id"], [])) if b else (
            "sold out" if "sold_out" in j.notes else "no hold")
        table.setdefault(j.scenario, Counter())[outcome] += 1
    return {s: dict(sorted(c.items())) for s, c in sorted(table.items())}
