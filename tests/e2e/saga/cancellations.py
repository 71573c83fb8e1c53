"""Cancellations (R19): a booking cancelled by its customer or with its showtime is refunded in full exactly
once, its voucher use is released, its customer gets one cancellation e-mail; a cancelled showtime keeps no
live hold, no booking, no open payment and no money taken.

A booking counts as cancelled when a BookingCancelled names it on the topic (what other teams see).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .facts import Facts
from .verdict import Check, by, data

CANCELLATION_REFUNDS = {"CUSTOMER": "CUSTOMER_CANCELLED", "SHOWTIME_CANCELLED": "SHOWTIME_CANCELLED"}


def cancelled_bookings(facts: Facts) -> dict[str, dict[str, Any]]:
    """booking id -> its (first) BookingCancelled."""
    return {booking: events[0] for booking, events in by(facts.of_type("BookingCancelled"), "bookingId").items()}


def refunded_once(facts: Facts) -> Check:
    check = Check("cancel.refunded_once", "a cancelled booking is CANCELLED, its payment REFUNDED in full once "
                                          "(one RefundIssued of the amount paid, one refund at the gateway)")
    refunds = by(facts.of_type("RefundIssued"), "paymentId")
    sessions = {s["reference"]: s for s in facts.sessions.values()}
    for booking, e in sorted(cancelled_bookings(facts).items()):
        b, pid = facts.bookings.get(booking), str(data(e).get("paymentId"))
        p, s = facts.payments.get(pid), sessions.get(pid)
        check.expect(b is not None and b["status"] == "CANCELLED",
                     f"booking {booking} cancelled on the topic but {b and b['status']} in hold-service")
        if p is None:
            check.expect(False, f"booking {booking} cancelled naming payment {pid}, which payment-service lacks")
            continue
        issued = [data(r).get("amountCents") for r in refunds.get(pid, [])]
        check.expect(p["status"] == "REFUNDED" and p.get("refund_reason") == CANCELLATION_REFUNDS.get(
                         data(e).get("reason", "")),
                     f"booking {booking} cancelled ({data(e).get('reason')}): payment {pid} {p['status']}, refund "
                     f"reason {p.get('refund_reason')}")
        check.expect(issued == [p["amount_cents"]],
                     f"booking {booking}: RefundIssued amounts {issued}, paid {p['amount_cents']}")
        check.expect(s is not None and len(s["refundIds"]) == 1,
                     f"booking {booking}: gateway refunds {s and s['refundIds']} for payment {pid}")
    return check


def voucher_released(facts: Facts) -> Check:
    check = Check("cancel.voucher_released", "a cancelled booking's voucher use (orderId = its payment) is "
                                             "RELEASED")
    uses = {r["order_id"]: r for r in facts.redemptions}
    for booking, e in sorted(cancelled_bookings(facts).items()):
        pid = str(data(e).get("paymentId"))
        p = facts.payments.get(pid)
        if p is None or p["voucher_code"] not in facts.vouchers or p["discount_cents"] <= 0:
            continue
        use = uses.get(pid)
        check.expect(use is not None and use["status"] == "RELEASED",
                     f"booking {booking} cancelled: the use of payment {pid} on {p['voucher_code']} is "
                     f"{use and use['status']}")
    return check


def one_email(facts: Facts) -> Check:
    """One cancellation e-mail per cancelled booking of a known customer, and no separate refund e-mail for
    it (the cancellation e-mail tells of the refund) unless the refund came before the cancellation."""
    check = Check("mail.one_cancellation", "one cancellation e-mail per cancelled booking of a known customer "
                                           "(queued and in the sink), none otherwise; no refund e-mail after it")
    queued: dict[tuple[str, str], int] = defaultdict(int)
    for row in facts.emails:
        queued[(row["booking_id"], row["kind"])] += 1
    delivered: dict[str, set[str]] = defaultdict(set)
    for m in facts.mail:
        if m["kind"] == "cancellation":
            delivered[m["booking"]].add(m["message_id"])
    cancelled = cancelled_bookings(facts)
    for booking, b in sorted(facts.bookings.items()):
        known = b["customer_id"] in facts.contacts
        expected = int(booking in cancelled and known)
        check.expect(queued[(booking, "cancellation")] == expected,
                     f"booking {booking} ({b['status']}): {queued[(booking, 'cancellation')]} cancellation e-mails "
                     f"queued, expected {expected}")
        if booking in cancelled and not _refund_came_first(facts, booking):
            check.expect(queued[(booking, "refund")] == 0,
                         f"booking {booking} cancelled: {queued[(booking, 'refund')]} refund e-mails besides its "
                         f"cancellation e-mail")
        if expected and facts.sent_here is None and facts.mail:
            check.expect(len(delivered.get(booking, set())) == 1,
                         f"booking {booking}: {len(delivered.get(booking, set()))} cancellation e-mails in the sink")
    return check


def _refund_came_first(facts: Facts, booking: str) -> bool:
    kinds = [e["type"] for e in facts.events if e.get("bookingId") == booking
             and e["type"] in ("RefundIssued", "BookingCancelled")]
    return bool(kinds) and kinds[0] == "RefundIssued"


def showtimes_closed(facts: Facts) -> Check:
    check = Check("cancel.showtime_closed", "a cancelled showtime keeps no BOOKED seat, no live hold, no "
                                            "booking not cancelled, no payment PENDING or SUCCEEDED")
    for e in facts.of_type("ShowtimeCancelled"):
        showtime = e["showtimeId"]
        left = sorted(s["seat_code"] for s in facts.seats
                      if s["showtime_id"] == showtime and s["status"] != "AVAILABLE")
        check.expect(not left, f"showtime {showtime} cancelled, seats still taken: {left[:10]}")
        for b in facts.bookings.values():
            if b["showtime_id"] != showtime:
                continue
            check.expect(b["status"] not in ("BOOKED", "HELD"),
                         f"showtime {showtime} cancelled, booking {b['booking_id']} still {b['status']}")
        for p in facts.payments.values():
            if p["showtime_id"] == showtime:
                check.expect(p["status"] not in ("PENDING", "SUCCEEDED"),
                             f"showtime {showtime} cancelled, payment {p['payment_id']} still {p['status']}")
    return check


def checks(facts: Facts) -> list[Check]:
    return [refunded_once(facts), voucher_released(facts), one_email(facts), showtimes_closed(facts)]
