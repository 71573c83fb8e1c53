"""Money, judged by the gateway's own view: nothing charged without a booking or a refund, refunds once."""

from __future__ import annotations

from typing import Any

from .cancellations import cancelled_bookings
from .facts import Facts
from .verdict import Check, by

PAID = "paid"


def _sessions_by_reference(facts: Facts) -> dict[str, dict[str, Any]]:
    return {s["reference"]: s for s in facts.sessions.values()}


def paid_is_resolved(facts: Facts) -> Check:
    check = Check("money.paid_resolved", "every payment the gateway reports paid is confirmed (a BookingConfirmed "
                                         "names it, no BookingCancelled undid it) or REFUNDED with a RefundIssued")
    confirmed = by(facts.of_type("BookingConfirmed"), "paymentId")
    refunds = by(facts.of_type("RefundIssued"), "paymentId")
    cancelled = cancelled_bookings(facts)
    for session in facts.sessions.values():
        if session["status"] != PAID:
            continue
        pid = session["reference"]
        p = facts.payments[pid]
        ok = ((p["status"] == "SUCCEEDED" and pid in confirmed and p["booking_id"] not in cancelled)
              or (p["status"] == "REFUNDED" and pid in refunds and bool(session["refundIds"])))
        check.expect(ok, f"payment {pid} paid at the gateway ({session['amountCents']} cents) but {p['status']}, "
                         f"{len(confirmed.get(pid, []))} BookingConfirmed, {len(refunds.get(pid, []))} RefundIssued, "
                         f"gateway refunds {session['refundIds']}")
    return check


def refunded_once(facts: Facts) -> Check:
    check = Check("money.refund_once", "no payment refunded twice; a refund is of money taken and announced")
    sessions = _sessions_by_reference(facts)
    refunds = by(facts.of_type("RefundIssued"), "paymentId")
    for pid, p in facts.payments.items():
        s = sessions.get(pid)
        at_gateway = len(s["refundIds"]) if s else 0
        check.expect(at_gateway <= 1 and len(refunds.get(pid, [])) <= 1,
                     f"payment {pid}: {at_gateway} gateway refunds, {len(refunds.get(pid, []))} RefundIssued")
        if p["status"] == "REFUNDED":
            check.expect(s is not None and s["status"] == PAID and at_gateway == 1 and pid in refunds,
                         f"payment {pid} REFUNDED but gateway says {s and s['status']} with refunds "
                         f"{s and s['refundIds']}, {len(refunds.get(pid, []))} RefundIssued")
    return check


def states_agree_with_gateway(facts: Facts) -> Check:
    """SUCCEEDED or REFUNDED only for money taken; FAILED or EXPIRED only for money not taken; no PENDING left."""
    check = Check("money.gateway_agrees", "payment states agree with the gateway (SUCCEEDED/REFUNDED = paid, "
                                          "FAILED/EXPIRED = not paid, nothing PENDING after reconciliation)")
    sessions = _sessions_by_reference(facts)
    for pid, p in facts.payments.items():
        s = sessions.get(pid)
        gateway = s["status"] if s else "no session"
        if p["status"] in ("SUCCEEDED", "REFUNDED"):
            check.expect(gateway == PAID, f"payment {pid} {p['status']} but the gateway says {gateway}")
        elif p["status"] in ("FAILED", "EXPIRED"):
            check.expect(gateway != PAID, f"payment {pid} {p['status']} but the gateway took the money "
                                          f"({s and s['amountCents']} cents, refunds {s and s['refundIds']})")
        else:
            check.expect(False, f"payment {pid} still {p['status']} (gateway: {gateway})")
    return check


def charged_as_promised(facts: Facts) -> Check:
    """The gateway charged what the checkout promised: amount = price of the hold minus the discount."""
    check = Check("money.amounts", "the gateway session amount == the payment's amount == hold price - discount")
    sessions = _sessions_by_reference(facts)
    for pid, p in facts.payments.items():
        b = facts.bookings.get(p["booking_id"])
        s = sessions.get(pid)
        if b is None or s is None:
            continue
        expected = max(0, b["amount_cents"] - p["discount_cents"])
        check.expect(p["amount_cents"] == expected == s["amountCents"],
                     f"payment {pid}: hold {b['amount_cents']} - discount {p['discount_cents']} = {expected}, "
                     f"payment {p['amount_cents']}, gateway {s['amountCents']}")
    return check
