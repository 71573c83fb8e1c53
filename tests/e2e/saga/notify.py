"""What the customer is told and credited: one ticket e-mail and one points row per confirmed booking,
priced at what was paid; and BookingConfirmed itself carries that price (docs/events)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .cancellations import cancelled_bookings
from .facts import Facts
from .scope import Sources
from .verdict import Check, confirmed_bookings, data


def _paid(facts: Facts, event: dict[str, Any]) -> dict[str, Any] | None:
    return facts.payments.get(str(data(event).get("paymentId")))


def confirmed_amounts(facts: Facts) -> Check:
    check = Check("events.confirmed_amount", "BookingConfirmed: amountCents == paid amount, discountCents == "
                                             "discount, paymentId a SUCCEEDED payment of the booking (REFUNDED "
                                             "once the booking is cancelled)")
    cancelled = cancelled_bookings(facts)
    for e in facts.of_type("BookingConfirmed"):
        p, d = _paid(facts, e), data(e)
        if p is None:
            check.expect(False, f"BookingConfirmed {e['eventId']} names unknown payment {d.get('paymentId')}")
            continue
        live = p["status"] == "SUCCEEDED" or (p["status"] == "REFUNDED" and str(e["bookingId"]) in cancelled)
        check.expect(p["booking_id"] == str(e["bookingId"]) and live,
                     f"BookingConfirmed of {e['bookingId']} names payment {p['payment_id']} "
                     f"({p['status']}, booking {p['booking_id']})")
        check.expect(d.get("amountCents") == p["amount_cents"],
                     f"BookingConfirmed of {e['bookingId']}: amountCents {d.get('amountCents')}, paid "
                     f"{p['amount_cents']} (discount {p['discount_cents']})")
        check.expect(d.get("discountCents") == p["discount_cents"],
                     f"BookingConfirmed of {e['bookingId']}: discountCents "
                     f"{d.get('discountCents', 'missing')}, payment's discount {p['discount_cents']}")
    return check


def tickets(facts: Facts, sources: Sources) -> tuple[Check, int]:
    """One ticket e-mail per confirmed booking of a customer with an address, none for anyone else: counted in
    the sink's folder (distinct Message-IDs naming the booking) and in the notifier's queue. Returns the check
    and how many the stack's notifier did not send itself (another run's sender took them: shared database)."""
    check = Check("mail.one_ticket", "exactly one ticket e-mail per confirmed booking of a known customer, "
                                     "none otherwise")
    confirmed = confirmed_bookings(facts)
    queued: dict[str, list[str]] = defaultdict(list)
    for row in facts.emails:
        if row["kind"] == "ticket":
            queued[row["booking_id"]].append(row["message_id"])
    delivered: dict[str, set[str]] = defaultdict(set)
    for m in facts.mail:
        if m["kind"] == "ticket":
            delivered[m["booking"]].add(m["message_id"])
    foreign = 0
    for booking, b in facts.bookings.items():
        known = b["customer_id"] in facts.contacts
        expected = int(booking in confirmed and known)
        ids = queued.get(booking, [])
        check.expect(len(ids) == expected, f"booking {booking} ({b['status']}, customer "
                                           f"{'known' if known else 'unknown'}): {len(ids)} ticket e-mails queued, "
                                           f"expected {expected}")
        if sources.mail_dir is None:
            continue
        sink = delivered.get(booking, set())
        elsewhere = {i for i in ids if facts.sent_here is not None and i not in facts.sent_here and i not in sink}
        foreign += len(elsewhere)
        check.expect(len(sink) + len(elsewhere) == expected and len(sink) <= expected,
                     f"booking {booking}: {len(sink)} ticket e-mails in the sink (+{len(elsewhere)} sent by another "
                     f"run's notifier), expected {expected}")
    return check, foreign


def points(facts: Facts, sources: Sources) -> Check:
    check = Check("points.one_row", "one loyalty_points row per confirmed booking of a known customer (at most "
                                    "one for others), points from the amount paid; none for unconfirmed bookings")
    confirmed = confirmed_bookings(facts)
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in facts.points:
        rows[row["booking_id"]].append(row)
    for booking, b in facts.bookings.items():
        got = rows.get(booking, [])
        event = confirmed.get(booking)
        known = b["customer_id"] in facts.contacts
        if event is None:
            check.expect(not got, f"booking {booking} ({b['status']}) not confirmed but credited {got}")
            continue
        check.expect(len(got) == 1 if known else len(got) <= 1,
                     f"confirmed booking {booking} of a {'known' if known else 'unknown'} customer: "
                     f"{len(got)} points rows")
        p = _paid(facts, event)
        for row in got:
            if p is not None:
                paid = p["amount_cents"]
                check.expect(row["amount_cents"] == paid and row["points"] == paid // sources.cents_per_point,
                             f"booking {booking}: credited {row['points']} points for {row['amount_cents']} cents; "
                             f"paid {paid} cents = {paid // sources.cents_per_point} points")
    return check
