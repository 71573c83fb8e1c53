"""What only the caller saw, checked against the contract and the databases (the history, Jepsen style)."""

from __future__ import annotations

from .facts import Facts
from .history import History, under_fault
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
    for op in [*history.completions("hold"), *history.completions("hold_best")]:
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


def customers_cannot_move_uses(history: History) -> Check:
    """Voucher uses belong to payment-service (docs/api): a customer releasing or confirming one
    gets 404, or he could free his use and be discounted again (scenario S5, docs/reliability.md)."""
    check = Check("calls.customer_cannot_move_uses", "a customer's release or confirm of a voucher use is 404")
    for op in history.completions():
        if op["f"] in ("voucher_release", "voucher_confirm"):
            check.expect(op.get("status") == 404, f"customer {op['f']} of {op['value']} answered {op.get('status')}")
    return check


def quotes_answer(history: History) -> Check:
    check = Check("calls.quote", "GET /vouchers/{code}/quote answers 200 {code, eligible, discountAmount, reason}; "
                                 "503 only while a fault is absorbed")
    for op in history.completions("quote"):
        absorbing = op.get("status") == 503 and under_fault(history.ops, op["time"])
        check.expect(absorbing or (op.get("status") == 200 and "eligible" in op.get("body", {})),
                     f"GET /vouchers/{op['value']['code']}/quote answered {op.get('status')} {op.get('error')}")
    return check


def retry_gets_voucher_again(history: History) -> Check:
    """orderId = paymentId: a declined attempt gives its use back, so the next checkout of the same hold with
    the same voucher is discounted again (issue 11 case 2). The journey tried three times, a second apart."""
    check = Check("calls.retry_gets_voucher_again", "after a declined payment, a new checkout of the same hold "
                                                    "with the same voucher is not refused ALREADY_USED")
    for j in history.journeys.values():
        if "declined" in j.notes:
            check.expect("retry_refused_already_used" not in j.notes,
                         f"journey {j.id} (customer {j.customer}): after the decline of {j.payment_ids[:1]} the retry "
                         f"with the same voucher was refused ALREADY_USED three times")
    return check
