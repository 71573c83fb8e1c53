"""What only the caller saw, checked against the contract and the databases (the history, Jepsen style)."""

from __future__ import annotations

from .facts import Facts
from .history import History
from .verdict import Check


def no_bare_errors(history: History) -> Check:
    check = Check("calls.no_bare_5xx", "no call answered a 5xx other than 503 UNAVAILABLE")
    for op in history.completions():
        status = op.get("status")
        check.expect(status is None or status < 500 or status == 503,
                     f"{op['f']} {op['value']} answered {status} {op.get('error')}")
    return check


def acknowledged_exists(history: History, facts: Facts) -> Check:
    """An acknowledged hold or checkout is committed, with what the customer was told."""
    check = Check("calls.acknowledged_committed", "every 201 hold and checkout exists with the amounts it showed")
    holds = {b["hold_id"] for b in facts.bookings.values()}
    for op in history.completions("hold"):
        if op["type"] == "ok":
            check.expect(op["body"].get("holdId") in holds, f"hold {op['body'].get('holdId')} acknowledged, not stored")
    for op in history.completions("checkout"):
        if op["type"] != "ok":
            continue
        body = op["body"]
        p = facts.payments.get(body.get("paymentId", ""))
        check.expect(p is not None and (p["amount_cents"], p["discount_cents"]) == (body.get("amountCents"),
                                                                                   body.get("discountCents")),
                     f"checkout {body.get('paymentId')} acknowledged ({body.get('amountCents')} cents, "
                     f"{body.get('discountCents')} off) but stored as {p and (p['amount_cents'], p['discount_cents'])}")
    return check


def vouchers_as_contracted(history: History) -> Check:
    """Voucher uses belong to payment-service: a customer may quote, never release or confirm; and a declined
    payment gives its use back, so the retried checkout of the same hold gets the voucher again."""
    check = Check("calls.voucher_contract", "customers get 404 on reservations, 200 on quotes; a declined "
                                            "attempt's voucher is granted again to the retry")
    for op in history.completions():
        if op["f"] in ("voucher_release", "voucher_confirm"):
            check.expect(op.get("status") == 404, f"customer {op['f']} of {op['value']} answered {op.get('status')} "
                                                  f"(contract: 404, only payment-service may)")
        elif op["f"] == "quote":
            check.expect(op.get("status") == 200 and "eligible" in op.get("body", {}),
                         f"GET /vouchers/{op['value']['code']}/quote answered {op.get('status')} {op.get('error')}")
    for j in history.journeys.values():
        if "declined" in j.notes:
            check.expect("retry_refused_already_used" not in j.notes,
                         f"journey {j.id} (customer {j.customer}): after the decline of {j.payment_ids[:1]} the retry "
                         f"with the same voucher was refused ALREADY_USED three times")
    return check
