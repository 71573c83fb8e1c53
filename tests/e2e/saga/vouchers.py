"""Vouchers: the counters hold, and the discounts given match the uses confirmed (docs/saga.md)."""

from __future__ import annotations

from collections import Counter

from .facts import Facts
from .verdict import LIVE, Check

# The redemption state a payment's final state must leave (orderId = paymentId).
EXPECTED = {"SUCCEEDED": "CONFIRMED", "FAILED": "RELEASED", "EXPIRED": "RELEASED", "REFUNDED": "RELEASED",
            "PENDING": "RESERVED"}


def counters(facts: Facts) -> Check:
    check = Check("voucher.counters", "used_count <= total_limit, used_count == RESERVED + CONFIRMED <= limit")
    for code, v in sorted(facts.vouchers.items()):
        states = Counter(r["status"] for r in facts.redemptions if r["voucher_code"] == code)
        live = sum(states[s] for s in LIVE)
        check.expect(v["used_count"] <= v["total_limit"], f"{code}: used {v['used_count']} > limit {v['total_limit']}")
        check.expect(v["used_count"] == live, f"{code}: used_count {v['used_count']} != RESERVED {states['RESERVED']}"
                                              f" + CONFIRMED {states['CONFIRMED']}")
        check.expect(live <= v["total_limit"], f"{code}: {live} live uses > limit {v['total_limit']}")
    return check


def discounts(facts: Facts) -> Check:
    check = Check("voucher.discounts", "live discounted payments of a voucher == its CONFIRMED uses <= limit")
    for code, v in sorted(facts.vouchers.items()):
        confirmed = sum(1 for r in facts.redemptions if r["voucher_code"] == code and r["status"] == "CONFIRMED")
        granted = [p["payment_id"] for p in facts.payments.values()
                   if p["voucher_code"] == code and p["discount_cents"] > 0 and p["status"] == "SUCCEEDED"]
        check.expect(len(granted) == confirmed, f"{code}: {len(granted)} live discounted payments, "
                                                f"{confirmed} CONFIRMED uses")
        check.expect(len(granted) <= v["total_limit"], f"{code}: discount granted to {len(granted)} paid payments, "
                                                       f"limit {v['total_limit']}")
    return check


def one_use_per_payment(facts: Facts) -> Check:
    """orderId = paymentId: each discounted payment has its own use, in the state its payment left it. A
    checkout that failed after its use was reserved but before its payment was recorded (a 503 while a
    broker or the gate was failing over) leaves a use of no payment, which must end RELEASED."""
    check = Check("voucher.order_is_payment", "each use's orderId is a discounted payment of that voucher, in "
                                              "the state its payment leaves (SUCCEEDED: CONFIRMED, else RELEASED; "
                                              "no payment recorded: RELEASED)")
    uses = {r["order_id"]: r for r in facts.redemptions}
    for r in facts.redemptions:
        p = facts.payments.get(r["order_id"])
        if p is None:
            check.expect(r["status"] == "RELEASED" and r["order_id"] not in facts.bookings,
                         f"{r['voucher_code']}: use {r['status']} with orderId {r['order_id']}, which is no payment"
                         + (" (it is a bookingId)" if r["order_id"] in facts.bookings else ""))
            continue
        check.expect(p["voucher_code"] == r["voucher_code"],
                     f"{r['voucher_code']}: use {r['status']} with orderId {r['order_id']}, a payment with "
                     f"voucher {p['voucher_code']}")
    for pid, p in facts.payments.items():
        if p["voucher_code"] in facts.vouchers and p["discount_cents"] > 0:
            r = uses.get(pid)
            check.expect(r is not None and r["status"] == EXPECTED[p["status"]],
                         f"payment {pid} ({p['status']}, {p['discount_cents']} off with {p['voucher_code']}) has "
                         f"use {r and r['status']}, expected {EXPECTED[p['status']]}")
    return check
