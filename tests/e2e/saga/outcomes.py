"""How each booking and each journey ended, read from the databases (never from what callers were told)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .facts import Facts
from .history import History
from .verdict import data, payments_of


def booking_outcome(booking: dict[str, Any], payments: list[dict[str, Any]], ended_by: str | None = None) -> str:
    """`ended_by`: why the booking was cancelled (BookingCancelled's reason), or why its hold was released
    when that was its showtime's cancellation (SHOWTIME_CANCELLED)."""
    states = [p["status"] for p in payments]
    retried = any(s in ("FAILED", "EXPIRED") for s in states[:-1])
    if booking["status"] == "CANCELLED":
        who = {"CUSTOMER": " by its customer", "SHOWTIME_CANCELLED": " with its showtime"}.get(ended_by or "", "")
        return f"booked, cancelled{who}, " + ("refunded" if "REFUNDED" in states else "not refunded")
    if booking["status"] == "RELEASED" and ended_by == "SHOWTIME_CANCELLED":
        return "released with its showtime" + (" during checkout" if payments else "")
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


def endings(facts: Facts) -> dict[str, str]:
    """booking id -> why it was cancelled, or SHOWTIME_CANCELLED when its hold was released with its showtime."""
    ended = {str(e["bookingId"]): str(data(e).get("reason")) for e in facts.of_type("BookingCancelled")}
    for e in facts.of_type("SeatsReleased"):
        if data(e).get("reason") == "SHOWTIME_CANCELLED":
            ended.setdefault(str(e["bookingId"]), "SHOWTIME_CANCELLED")
    return ended


def outcomes(facts: Facts) -> dict[str, int]:
    paid, ended = payments_of(facts), endings(facts)
    counts = Counter(booking_outcome(b, paid.get(k, []), ended.get(k)) for k, b in facts.bookings.items())
    counts.update(f"payments {p['status']}" for p in facts.payments.values())
    counts["declined then retried"] = sum(
        1 for pays in paid.values() if any(p["status"] == "FAILED" for p in pays[:-1]))
    return dict(sorted(counts.items()))


def journey_table(history: History, facts: Facts) -> dict[str, dict[str, int]]:
    """scenario -> outcome -> journeys."""
    paid, ended = payments_of(facts), endings(facts)
    table: dict[str, Counter[str]] = {}
    for j in history.journeys.values():
        b = facts.bookings.get(j.booking_id or "")
        outcome = booking_outcome(b, paid.get(b["booking_id"], []), ended.get(b["booking_id"])) if b else (
            "sold out" if "sold_out" in j.notes else "no hold")
        table.setdefault(j.scenario, Counter())[outcome] += 1
    return {s: dict(sorted(c.items())) for s, c in sorted(table.items())}
