"""Amounts are the prices of the tickets held: each hold's tickets are its seats, each priced as its showtime
prices the seat's category and the ticket's type, and every amount that follows the hold (the hold's own,
BookingConfirmed's price and tickets, each payment's price before its discount, the points) is their sum.

A hold written before ticket types existed has no tickets: each of its seats was an ADULT ticket.
"""

from __future__ import annotations

from typing import Any

from .facts import Facts
from .verdict import Check, confirmed_bookings, data, payments_of

ADULT = "ADULT"


def _categories(facts: Facts) -> dict[tuple[int, str], str]:
    return {(s["showtime_id"], s["seat_code"]): s.get("category", "STANDARD") for s in facts.seats}


def _tickets(b: dict[str, Any], categories: dict[tuple[int, str], str],
             prices: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """The hold's tickets as recorded (or, for a hold from before ticket types, one ADULT ticket per seat)."""
    if b.get("tickets"):
        return list(b["tickets"])
    return [{"seat": seat, "category": categories.get((b["showtime_id"], seat)), "ticketType": ADULT,
             "priceCents": prices.get(categories.get((b["showtime_id"], seat)) or "", {}).get(ADULT)}
            for seat in b["seats"]]


def _key(tickets: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((t.get("seat"), t.get("category"), t.get("ticketType"), t.get("priceCents")) for t in tickets)


def amounts_are_ticket_prices(facts: Facts) -> Check:
    check = Check("prices.amounts_are_tickets", "a hold's tickets are its seats priced as the showtime prices "
                                                "their category and type; the hold's amount, BookingConfirmed "
                                                "(price and tickets), each payment before its discount and the "
                                                "points equal their sum")
    categories = _categories(facts)
    confirmed, payments = confirmed_bookings(facts), payments_of(facts)
    points = {row["booking_id"]: row for row in facts.points}
    for booking, b in sorted(facts.bookings.items()):
        prices = facts.prices.get(b["showtime_id"])
        if prices is None:
            check.expect(False, f"booking {booking}: showtime {b['showtime_id']} has no prices")
            continue
        tickets = _tickets(b, categories, prices)
        check.expect(sorted(t.get("seat") for t in tickets) == sorted(b["seats"]),
                     f"booking {booking}: tickets for {sorted(t.get('seat') for t in tickets)}, seats {b['seats']}")
        for t in tickets:
            category = categories.get((b["showtime_id"], t.get("seat")))
            price = prices.get(category or "", {}).get(t.get("ticketType"))
            check.expect(t.get("category") == category and t.get("priceCents") == price is not None,
                         f"booking {booking}: ticket {t} but seat {t.get('seat')} is {category}, priced "
                         f"{price} for {t.get('ticketType')}")
        total = sum(t.get("priceCents") or 0 for t in tickets)
        check.expect(b["amount_cents"] == total,
                     f"booking {booking}: hold amount {b['amount_cents']}, its tickets sum to {total}")
        for p in payments.get(booking, []):
            check.expect(p["amount_cents"] + p["discount_cents"] == total,
                         f"booking {booking}: payment {p['payment_id']} {p['amount_cents']} + discount "
                         f"{p['discount_cents']}, tickets {total}")
        if (e := confirmed.get(booking)) is not None:
            d = data(e)
            check.expect(d.get("amountCents", 0) + d.get("discountCents", 0) == total,
                         f"BookingConfirmed of {booking}: {d.get('amountCents')} + discount {d.get('discountCents')}"
                         f", tickets {total}")
            check.expect(d.get("tickets") is None or _key(d["tickets"]) == _key(tickets),
                         f"BookingConfirmed of {booking} carries tickets {d.get('tickets')}, the hold {tickets}")
            if (row := points.get(booking)) is not None:
                check.expect(row["amount_cents"] + d.get("discountCents", 0) == total,
                             f"booking {booking}: points for {row['amount_cents']} + discount "
                             f"{d.get('discountCents')}, tickets {total}")
    return check
