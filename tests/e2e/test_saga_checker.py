"""The saga checker on hand-made facts (no infrastructure): a consistent world passes every invariant, and
each way the saga can break makes the invariant that guards it fail. Without this, a checker that passes
everything would look the same as a saga that keeps every rule once the fixes land."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from .saga import Sources, judge
from .saga.facts import Facts
from .saga.history import History

ST, ST2, CUSTOMER, STRANGER = 42, 43, 7, 8
B1, B2, B3 = "b0000000-0000-0000-0000-000000000001", "b0000000-0000-0000-0000-000000000002", \
    "b0000000-0000-0000-0000-000000000003"
H1, H2, H3 = "a0000000-0000-0000-0000-000000000001", "a0000000-0000-0000-0000-000000000002", \
    "a0000000-0000-0000-0000-000000000003"
P1, P2 = "c0000000-0000-0000-0000-000000000001", "c0000000-0000-0000-0000-000000000002"
B5, B6 = "b0000000-0000-0000-0000-000000000005", "b0000000-0000-0000-0000-000000000006"
H5, H6 = "a0000000-0000-0000-0000-000000000005", "a0000000-0000-0000-0000-000000000006"
P5, P6 = "c0000000-0000-0000-0000-000000000005", "c0000000-0000-0000-0000-000000000006"
SOURCES = Sources(dsn={}, hold_url="", sim_url="", bootstrap="", groups={}, mail_dir=Path("."),
                  hold_max_seconds=1200, confirm_grace_seconds=120)
T0 = datetime(2031, 1, 1, 12, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def iso(seconds: float) -> str:
    return at(seconds).isoformat().replace("+00:00", "Z")


def event(kind: str, booking: str, n: int, customer: int = CUSTOMER, showtime: int = ST,
          **data: object) -> dict[str, object]:
    return {"eventId": f"e{n}", "type": kind, "bookingId": booking, "showtimeId": showtime, "customerId": customer,
            "data": data}


def ticket(seat: str, category: str, ticket_type: str, price: int) -> dict[str, object]:
    return {"seat": seat, "category": category, "ticketType": ticket_type, "priceCents": price}


def world() -> Facts:
    """B1 booked and paid with voucher V (300 off); B2 paid in time but applied after its hold expired, beyond
    the grace, refunded; B3 cancelled."""
    f = Facts()
    f.showtimes = {ST: 6}
    f.prices = {ST: {"STANDARD": {"ADULT": 1200, "CHILD": 800}, "VIP": {"ADULT": 1800}}}
    f.seats = [{"showtime_id": ST, "seat_code": c, "status": s, "hold_id": h, "booking_id": b, "category": "STANDARD"}
               for c, s, h, b in (("A1", "BOOKED", H1, B1), ("A2", "BOOKED", H1, B1), ("A3", "AVAILABLE", None, None),
                                  ("A4", "AVAILABLE", None, None))]
    f.bookings = {
        B1: {"hold_id": H1, "booking_id": B1, "customer_id": CUSTOMER, "showtime_id": ST, "seats": ["A1", "A2"],
             "amount_cents": 2400, "status": "BOOKED", "payment_id": P1, "expired": True, "created_at": at(0),
             "expires_at": at(600), "tickets": [ticket("A1", "STANDARD", "ADULT", 1200),
                                                ticket("A2", "STANDARD", "ADULT", 1200)]},
        B2: {"hold_id": H2, "booking_id": B2, "customer_id": STRANGER, "showtime_id": ST, "seats": ["A3"],
             "amount_cents": 1200, "status": "EXPIRED", "payment_id": None, "expired": True, "created_at": at(0),
             "expires_at": at(600), "tickets": []},  # held before ticket types: one ADULT ticket per seat
        B3: {"hold_id": H3, "booking_id": B3, "customer_id": CUSTOMER, "showtime_id": ST, "seats": ["A4"],
             "amount_cents": 1200, "status": "RELEASED", "payment_id": None, "expired": True, "created_at": at(0),
             "expires_at": at(600), "tickets": [ticket("A4", "STANDARD", "ADULT", 1200)]},
    }
    f.payments = {
        P1: {"payment_id": P1, "hold_id": H1, "booking_id": B1, "customer_id": CUSTOMER, "showtime_id": ST,
             "amount_cents": 2100, "discount_cents": 300, "voucher_code": "V", "status": "SUCCEEDED"},
        P2: {"payment_id": P2, "hold_id": H2, "booking_id": B2, "customer_id": STRANGER, "showtime_id": ST,
             "amount_cents": 1200, "discount_cents": 0, "voucher_code": None, "status": "REFUNDED",
             "refund_reason": "HOLD_EXPIRED"},
    }
    f.events = [
        event("SeatsHeld", B1, 1, holdId=H1, seats=["A1", "A2"], seatMapVersion=1),
        event("SeatsHeld", B2, 2, STRANGER, holdId=H2, seats=["A3"], seatMapVersion=2),
        event("SeatsHeld", B3, 3, holdId=H3, seats=["A4"], seatMapVersion=3),
        event("SeatsReleased", B3, 4, holdId=H3, seats=["A4"], reason="CANCELLED", seatMapVersion=4),
        event("PaymentSucceeded", B1, 5, paymentId=P1, amountCents=2100),
        {**event("BookingConfirmed", B1, 6, holdId=H1, seats=["A1", "A2"], amountCents=2100, discountCents=300,
                 paymentId=P1, seatMapVersion=5, tickets=f.bookings[B1]["tickets"]), "occurredAt": iso(100)},
        event("SeatsReleased", B2, 7, STRANGER, holdId=H2, seats=["A3"], reason="EXPIRED", seatMapVersion=6),
        event("PaymentSucceeded", B2, 8, STRANGER, paymentId=P2, amountCents=1200),
        {**event("BookingFailed", B2, 9, STRANGER, paymentId=P2, reason="HOLD_EXPIRED"), "occurredAt": iso(610)},
        event("RefundIssued", B2, 10, STRANGER, paymentId=P2, amountCents=1200, refundId="re_1"),
    ]
    f.outbox = {"hold": {"e1": True, "e6": True}, "payment": {"e5": True, "e10": True}}
    f.sessions = {"cs_1": {"reference": P1, "status": "paid", "amountCents": 2100, "refundIds": [],
                           "paidAt": iso(90), "expiresAt": iso(480)},
                  "cs_2": {"reference": P2, "status": "paid", "amountCents": 1200, "refundIds": ["re_1"],
                           "paidAt": iso(300), "expiresAt": iso(480)}}  # applied 130 s late: beyond the grace
    f.vouchers = {"V": {"code": "V", "total_limit": 1, "used_count": 1}}
    f.redemptions = [{"voucher_code": "V", "customer_id": CUSTOMER, "order_id": P1, "status": "CONFIRMED"}]
    f.contacts = {CUSTOMER}
    f.points = [{"booking_id": B1, "customer_id": CUSTOMER, "amount_cents": 2100, "points": 21}]
    f.emails = [{"booking_id": B1, "kind": "ticket", "status": "SENT", "message_id": "<e6.ticket@n>"}]
    f.mail = [{"booking": B1, "message_id": "<e6.ticket@n>", "kind": "ticket", "file": "e6.eml"}]
    f.seat_maps = {ST: {"version": 6, "seats": [{"code": "A1", "status": "BOOKED"}, {"code": "A2", "status": "BOOKED"},
                                                {"code": "A3", "status": "AVAILABLE"},
                                                {"code": "A4", "status": "AVAILABLE"}]}}
    cancelled_showtime(f)
    return f


def cancelled_showtime(f: Facts) -> None:
    """Showtime ST2, cancelled by an operator: B5 was booked with voucher W (200 off) and is cancelled and
    refunded in full; B6 was on the gateway's page, its hold released and its payment expired at the gateway."""
    f.showtimes[ST2] = 5
    f.prices[ST2] = {"STANDARD": {"ADULT": 900, "CHILD": 600}, "ACCESSIBLE": {"ADULT": 700}}
    f.seats += [{"showtime_id": ST2, "seat_code": c, "status": "AVAILABLE", "hold_id": None, "booking_id": None,
                 "category": category} for c, category in (("A1", "STANDARD"), ("A2", "STANDARD"),
                                                           ("A3", "ACCESSIBLE"))]
    f.bookings[B5] = {"hold_id": H5, "booking_id": B5, "customer_id": CUSTOMER, "showtime_id": ST2,
                      "seats": ["A1", "A2"], "amount_cents": 1500, "status": "CANCELLED", "payment_id": P5,
                      "expired": True, "created_at": at(0), "expires_at": at(600),
                      "tickets": [ticket("A1", "STANDARD", "ADULT", 900), ticket("A2", "STANDARD", "CHILD", 600)]}
    f.bookings[B6] = {"hold_id": H6, "booking_id": B6, "customer_id": STRANGER, "showtime_id": ST2, "seats": ["A3"],
                      "amount_cents": 700, "status": "RELEASED", "payment_id": None, "expired": True,
                      "created_at": at(0), "expires_at": at(600), "tickets": [ticket("A3", "ACCESSIBLE", "ADULT", 700)]}
    f.payments[P5] = {"payment_id": P5, "hold_id": H5, "booking_id": B5, "customer_id": CUSTOMER, "showtime_id": ST2,
                      "amount_cents": 1300, "discount_cents": 200, "voucher_code": "W", "status": "REFUNDED",
                      "refund_reason": "SHOWTIME_CANCELLED"}
    f.payments[P6] = {"payment_id": P6, "hold_id": H6, "booking_id": B6, "customer_id": STRANGER, "showtime_id": ST2,
                      "amount_cents": 700, "discount_cents": 0, "voucher_code": None, "status": "EXPIRED"}
    f.events += [
        event("SeatsHeld", B5, 21, showtime=ST2, holdId=H5, seats=["A1", "A2"], seatMapVersion=1),
        event("SeatsHeld", B6, 22, STRANGER, ST2, holdId=H6, seats=["A3"], seatMapVersion=2),
        event("PaymentSucceeded", B5, 23, showtime=ST2, paymentId=P5, amountCents=1300),
        {**event("BookingConfirmed", B5, 24, showtime=ST2, holdId=H5, seats=["A1", "A2"], amountCents=1300,
                 discountCents=200, paymentId=P5, seatMapVersion=3, tickets=f.bookings[B5]["tickets"]),
         "occurredAt": iso(100)},
        {"eventId": "e25", "type": "ShowtimeCancelled", "showtimeId": ST2, "data": {"reason": "projector failure"}},
        event("SeatsReleased", B6, 26, STRANGER, ST2, holdId=H6, seats=["A3"], reason="SHOWTIME_CANCELLED",
              seatMapVersion=4),
        event("PaymentFailed", B6, 27, STRANGER, ST2, paymentId=P6, reason="EXPIRED"),
        event("BookingCancelled", B5, 28, showtime=ST2, holdId=H5, seats=["A1", "A2"], reason="SHOWTIME_CANCELLED",
              paymentId=P5, seatMapVersion=5),
        event("RefundIssued", B5, 29, showtime=ST2, paymentId=P5, amountCents=1300, refundId="re_5"),
    ]
    f.sessions["cs_5"] = {"reference": P5, "status": "paid", "amountCents": 1300, "refundIds": ["re_5"],
                          "paidAt": iso(90), "expiresAt": iso(480)}
    f.sessions["cs_6"] = {"reference": P6, "status": "expired", "amountCents": 700, "refundIds": [],
                          "paidAt": None, "expiresAt": iso(480)}
    f.vouchers["W"] = {"code": "W", "total_limit": 1, "used_count": 0}
    f.redemptions.append({"voucher_code": "W", "customer_id": CUSTOMER, "order_id": P5, "status": "RELEASED"})
    f.points.append({"booking_id": B5, "customer_id": CUSTOMER, "amount_cents": 1300, "points": 13})
    f.emails += [{"booking_id": B5, "kind": "ticket", "status": "SENT", "message_id": "<e24.ticket@n>"},
                 {"booking_id": B5, "kind": "cancellation", "status": "SENT", "message_id": "<e28.cancellation@n>"}]
    f.mail += [{"booking": B5, "message_id": "<e24.ticket@n>", "kind": "ticket", "file": "e24.eml"},
               {"booking": B5, "message_id": "<e28.cancellation@n>", "kind": "cancellation", "file": "e28.eml"}]
    f.seat_maps[ST2] = {"version": 5, "seats": [{"code": c, "status": "AVAILABLE"} for c in ("A1", "A2", "A3")]}


def failing(facts: Facts, history: History | None = None) -> set[str]:
    checks, _ = judge(facts, SOURCES, history)
    return {c.name for c in checks if c.violations}


def test_a_consistent_saga_breaks_no_invariant() -> None:
    checks, _ = judge(world(), SOURCES, History())
    assert {c.name: c.violations for c in checks if c.violations} == {}
    assert all(c.checked for c in checks if not c.name.startswith("calls."))  # none of them vacuous


def _event(f: Facts, event_id: str) -> dict[str, object]:
    return next(e for e in f.events if e["eventId"] == event_id)


def two_owners(f: Facts) -> None:
    f.bookings["b4"] = {**f.bookings[B1], "booking_id": "b4", "hold_id": "h4", "payment_id": None}


def paid_but_forgotten(f: Facts) -> None:  # the refund never happened (issue 11 cases 4 and 5)
    f.payments[P2]["status"] = "EXPIRED"
    f.events = [e for e in f.events if e["type"] != "RefundIssued"]
    f.sessions["cs_2"]["refundIds"] = []


def refunded_twice(f: Facts) -> None:
    f.events.append({**_event(f, "e10"), "eventId": "e11"})
    f.sessions["cs_2"]["refundIds"] = ["re_1", "re_2"]


def over_the_limit(f: Facts) -> None:
    f.vouchers["V"]["used_count"] = 2


def discount_without_use(f: Facts) -> None:  # the customer released his own use (issue 11 case 1)
    f.redemptions[0]["status"] = "RELEASED"
    f.vouchers["V"]["used_count"] = 0


def order_is_booking(f: Facts) -> None:
    f.redemptions[0]["order_id"] = B1


def use_of_no_payment_kept(f: Facts) -> None:  # a failed checkout's use, never given back
    f.redemptions.append({"voucher_code": "V", "customer_id": CUSTOMER, "order_id": "no-such-payment",
                          "status": "RESERVED"})


def undiscounted_confirmation(f: Facts) -> None:  # issue 11 case 11
    data = _event(f, "e6")["data"]
    assert isinstance(data, dict)
    data["amountCents"] = 2400
    del data["discountCents"]


def points_at_list_price(f: Facts) -> None:
    f.points[0].update(amount_cents=2400, points=24)


def ticket_lost(f: Facts) -> None:
    f.mail = []


def ticket_to_a_stranger(f: Facts) -> None:
    f.emails.append({"booking_id": B2, "kind": "ticket", "status": "SENT", "message_id": "<x.ticket@n>"})


def release_names_a_re_held_seat(f: Facts) -> None:  # issue 11 case 3
    data = _event(f, "e7")["data"]
    assert isinstance(data, dict)
    data["seats"] = ["A3", "A1"]


def version_twice(f: Facts) -> None:
    data = _event(f, "e7")["data"]
    assert isinstance(data, dict)
    data["seatMapVersion"] = 5


def map_differs(f: Facts) -> None:
    f.seat_maps[ST]["seats"][2]["status"] = "HELD"


def dead_letter(f: Facts) -> None:
    f.dead_letters.append({"topic": "booking-events.DLQ", "type": "BookingFailed", "bookingId": B2, "error": "x"})


def lost_event(f: Facts) -> None:
    f.outbox["payment"]["e99"] = True


def charged_more(f: Facts) -> None:
    f.sessions["cs_1"]["amountCents"] = 2400


def refunded_for_lateness(f: Facts) -> None:  # paid in time, hold-service found the hold expired within the grace
    _event(f, "e9")["occurredAt"] = iso(500)


def hold_past_its_maximum(f: Facts) -> None:  # extended beyond creation + HOLD_MAX, then booked there
    f.bookings[B1]["expires_at"] = at(1300)
    _event(f, "e6")["occurredAt"] = iso(1250)


def cancelled_not_refunded(f: Facts) -> None:  # the refund of a cancelled booking never happened
    f.payments[P5].update(status="SUCCEEDED", refund_reason=None)
    f.events = [e for e in f.events if e["eventId"] != "e29"]
    f.sessions["cs_5"]["refundIds"] = []


def cancelled_refunded_twice(f: Facts) -> None:
    f.events.append({**_event(f, "e29"), "eventId": "e30"})
    f.sessions["cs_5"]["refundIds"] = ["re_5", "re_6"]


def cancelled_refunded_in_part(f: Facts) -> None:  # a refund of the price less the discount, say, not of what was paid
    _event(f, "e29")["data"] = {"paymentId": P5, "amountCents": 1100, "refundId": "re_5"}


def cancelled_refund_for_another_reason(f: Facts) -> None:
    f.payments[P5]["refund_reason"] = "HOLD_EXPIRED"


def cancelled_still_booked_in_hold_service(f: Facts) -> None:
    f.bookings[B5]["status"] = "RELEASED"


def cancelled_use_kept(f: Facts) -> None:  # the voucher use stays CONFIRMED (and counted)
    f.redemptions[-1]["status"] = "CONFIRMED"
    f.vouchers["W"]["used_count"] = 1


def cancellation_emailed_twice(f: Facts) -> None:
    f.emails.append({"booking_id": B5, "kind": "cancellation", "status": "SENT", "message_id": "<e31.cancellation@n>"})


def cancellation_never_emailed(f: Facts) -> None:
    f.emails = [e for e in f.emails if e["kind"] != "cancellation"]


def cancellation_and_a_refund_email(f: Facts) -> None:
    f.emails.append({"booking_id": B5, "kind": "refund", "status": "SENT", "message_id": "<e29.refund@n>"})


def cancellation_emailed_to_no_contact(f: Facts) -> None:
    f.emails.append({"booking_id": B6, "kind": "cancellation", "status": "SENT", "message_id": "<e32.cancellation@n>"})


def cancelled_twice(f: Facts) -> None:
    f.events.append({**_event(f, "e28"), "eventId": "e33"})


def showtime_left_open(f: Facts) -> None:  # a hold and its payment survived the showtime's cancellation
    f.bookings[B6]["status"] = "HELD"
    f.payments[P6]["status"] = "PENDING"
    f.seats[-1]["status"] = "HELD"


def cancellation_frees_seats_not_booked(f: Facts) -> None:
    data = _event(f, "e28")["data"]
    assert isinstance(data, dict)
    data["seats"] = ["A1", "A2", "A3"]


def child_charged_as_an_adult(f: Facts) -> None:
    """B5's CHILD ticket priced at the ADULT 900, and everything after the hold consistent with that price:
    only the showtime's prices can tell."""
    f.bookings[B5]["tickets"][1]["priceCents"] = 900
    f.bookings[B5]["amount_cents"] = 1800
    f.payments[P5]["amount_cents"] = 1600
    f.sessions["cs_5"]["amountCents"] = 1600
    _event(f, "e24")["data"].update(amountCents=1600)  # type: ignore[union-attr]
    _event(f, "e29")["data"].update(amountCents=1600)  # type: ignore[union-attr]
    f.points[-1].update(amount_cents=1600, points=16)


def ticket_of_another_category(f: Facts) -> None:  # A2 is a STANDARD seat, its ticket says VIP
    f.bookings[B1]["tickets"][1]["category"] = "VIP"


def ticket_type_without_a_price(f: Facts) -> None:  # a SENIOR ticket where the showtime prices none
    f.bookings[B3]["tickets"][0]["ticketType"] = "SENIOR"


def hold_amount_not_its_tickets(f: Facts) -> None:
    f.bookings[B3]["amount_cents"] = 1000


def ticket_for_a_seat_not_held(f: Facts) -> None:
    f.bookings[B3]["tickets"][0]["seat"] = "A3"


def confirmation_names_other_tickets(f: Facts) -> None:
    _event(f, "e6")["data"]["tickets"] = [ticket("A1", "STANDARD", "ADULT", 1200),  # type: ignore[index]
                                          ticket("A2", "STANDARD", "CHILD", 800)]


def confirmation_priced_apart_from_its_tickets(f: Facts) -> None:
    _event(f, "e6")["data"].update(amountCents=1700, discountCents=300)  # type: ignore[union-attr]


@pytest.mark.parametrize("breach", [child_charged_as_an_adult, ticket_of_another_category, ticket_type_without_a_price,
                                    hold_amount_not_its_tickets, ticket_for_a_seat_not_held,
                                    confirmation_names_other_tickets])
def test_amounts_other_than_the_tickets_prices_are_caught_by_the_prices_invariant_alone(
        breach: Callable[[Facts], None]) -> None:
    """Each of these leaves every amount after the hold consistent with the hold's, so no other invariant
    catches it: the hold's tickets disagree with the showtime's prices, with its seats or with BookingConfirmed."""
    facts = copy.deepcopy(world())
    breach(facts)
    assert failing(facts) == {"prices.amounts_are_tickets"}


@pytest.mark.parametrize(("breach", "caught_by"), [
    (confirmation_priced_apart_from_its_tickets, {"prices.amounts_are_tickets", "events.confirmed_amount"}),
    (cancelled_not_refunded, {"cancel.refunded_once", "money.paid_resolved", "seats.booked_iff_paid"}),
    (cancelled_refunded_twice, {"cancel.refunded_once", "money.refund_once", "events.once"}),
    (cancelled_refunded_in_part, {"cancel.refunded_once"}),
    (cancelled_refund_for_another_reason, {"cancel.refunded_once"}),
    (cancelled_still_booked_in_hold_service, {"cancel.refunded_once"}),
    (cancelled_use_kept, {"cancel.voucher_released", "voucher.order_is_payment"}),
    (cancellation_emailed_twice, {"mail.one_cancellation"}),
    (cancellation_never_emailed, {"mail.one_cancellation"}),
    (cancellation_and_a_refund_email, {"mail.one_cancellation"}),
    (cancellation_emailed_to_no_contact, {"mail.one_cancellation"}),
    (cancelled_twice, {"events.once"}),
    (showtime_left_open, {"cancel.showtime_closed", "money.gateway_agrees"}),
    (cancellation_frees_seats_not_booked, {"seatmap.events_change_what_they_claim"}),
    (two_owners, {"seats.single_owner", "seats.booked_once"}),
    (paid_but_forgotten, {"money.paid_resolved", "money.gateway_agrees"}),
    (refunded_twice, {"money.refund_once", "events.once"}),
    (over_the_limit, {"voucher.counters"}),
    (discount_without_use, {"voucher.discounts", "voucher.order_is_payment"}),
    (order_is_booking, {"voucher.order_is_payment"}),
    (use_of_no_payment_kept, {"voucher.order_is_payment"}),
    (undiscounted_confirmation, {"events.confirmed_amount"}),
    (points_at_list_price, {"points.one_row"}),
    (ticket_lost, {"mail.one_ticket"}),
    (ticket_to_a_stranger, {"mail.one_ticket"}),
    (release_names_a_re_held_seat, {"seatmap.events_change_what_they_claim", "seatmap.replay"}),
    (version_twice, {"seatmap.versions"}),
    (map_differs, {"seatmap.replay"}),
    (dead_letter, {"events.none_dead_lettered"}),
    (lost_event, {"events.none_lost"}),
    (charged_more, {"money.amounts"}),
    (refunded_for_lateness, {"timing.paid_in_time_booked"}),
    (hold_past_its_maximum, {"timing.hold_max"}),
])
def test_each_breach_is_caught_by_its_invariant(breach: Callable[[Facts], None], caught_by: set[str]) -> None:
    facts = copy.deepcopy(world())
    breach(facts)
    assert caught_by <= failing(facts)


def test_a_failed_checkouts_use_given_back_is_no_breach() -> None:
    """A checkout that failed after its voucher use was reserved, before its payment was recorded (a 503 while
    a broker or the gate failed over): voucher-service's expiry hears 404 for the payment and releases it."""
    facts = copy.deepcopy(world())
    facts.redemptions.append({"voucher_code": "V", "customer_id": CUSTOMER, "order_id": "no-such-payment",
                              "status": "RELEASED"})
    assert not failing(facts)


def test_what_callers_saw_is_checked_against_the_contract() -> None:
    history = History()
    history.ops += [
        {"type": "info", "process": "c1", "f": "hold", "status": 500, "value": {}, "error": None},
        {"type": "ok", "process": "c1", "f": "voucher_release", "status": 204, "value": {"code": "V"}},
        {"type": "fail", "process": "c1", "f": "quote", "status": 404, "value": {"code": "V"}, "body": {}},
        {"type": "ok", "process": "c1", "f": "hold", "status": 201, "value": {}, "body": {"holdId": "nowhere"}},
    ]
    j = history.journey(CUSTOMER, "decline_then_retry")
    j.notes += ["declined", "voucher_already_used", "retry_refused_already_used"]
    assert {"calls.no_bare_5xx", "calls.customer_cannot_move_uses", "calls.quote",
            "calls.acknowledged_committed", "calls.retry_gets_voucher_again"} <= failing(world(), history)


def test_a_ticket_another_runs_notifier_sent_is_not_counted_lost() -> None:
    """The test database is shared: another run's sender may claim our queued e-mail and deliver it to its
    own sink. Known from our notifier's log, that is not a loss; an e-mail our notifier sent and the sink
    does not have is."""
    facts = world()
    facts.mail = []
    facts.sent_here = set()
    checks, foreign = judge(facts, SOURCES)
    assert foreign == 2 and "mail.one_ticket" not in {c.name for c in checks if c.violations}  # B1 and B5
    facts.sent_here = {"<e6.ticket@n>"}
    assert "mail.one_ticket" in failing(facts)


def test_a_refund_e_mail_before_a_late_cancellation_is_no_breach() -> None:
    """RefundIssued reached the notifier before BookingCancelled (a cancellation replayed late): the refund
    e-mail had gone, and the cancellation e-mail follows it; that is allowed, after it it is not."""
    facts = copy.deepcopy(world())
    facts.emails.append({"booking_id": B5, "kind": "refund", "status": "SENT", "message_id": "<e29.refund@n>"})
    refund = _event(facts, "e29")
    facts.events.remove(refund)
    facts.events.insert(facts.events.index(_event(facts, "e28")), refund)
    assert not failing(facts)


def test_the_outcomes_name_cancellations() -> None:
    from .saga.outcomes import outcomes
    counts = outcomes(world())
    assert counts["booked, cancelled with its showtime, refunded"] == 1
    assert counts["released with its showtime during checkout"] == 1


def test_a_quote_refused_503_is_allowed_only_while_a_fault_is_absorbed() -> None:
    def quote_503(at: float) -> dict[str, object]:
        return {"type": "info", "process": "c1", "f": "quote", "status": 503, "value": {"code": "V"},
                "error": "UNAVAILABLE", "body": {}, "time": at}

    kill = {"process": "nemesis", "f": "kill_redis_master", "value": {}, "journey": None}
    during = History()
    during.ops += [{**kill, "type": "invoke", "time": 10.0}, quote_503(12.0), {**kill, "type": "ok", "time": 20.0}]
    assert "calls.quote" not in failing(world(), during)
    outside = History()
    outside.ops += [{**kill, "type": "invoke", "time": 10.0}, {**kill, "type": "ok", "time": 20.0}, quote_503(60.0)]
    assert "calls.quote" in failing(world(), outside)


def test_a_seat_cancelled_then_sold_again_is_booked_once_at_a_time() -> None:
    """A customer's cancellation gives the seat back: another booking of it after the BookingCancelled (in
    seat-map order) is no double sale; before it, or two BOOKED bookings now, is one."""
    from .saga.seats import booked_once

    def facts(second_at: int, first_status: str = "CANCELLED") -> Facts:
        f = Facts()
        f.bookings = {B1: {"booking_id": B1, "showtime_id": ST, "seats": ["A1"], "status": first_status},
                      B2: {"booking_id": B2, "showtime_id": ST, "seats": ["A1"], "status": "BOOKED"}}
        f.events = [event("BookingConfirmed", B1, 1, seats=["A1"], seatMapVersion=2),
                    event("BookingCancelled", B1, 2, seats=["A1"], reason="CUSTOMER", seatMapVersion=3),
                    event("BookingConfirmed", B2, 3, seats=["A1"], seatMapVersion=second_at)]
        return f

    assert booked_once(facts(second_at=5)).violations == []
    assert booked_once(facts(second_at=5)).checked == 3  # two confirmations, one seat now
    assert booked_once(facts(second_at=2)).violations  # booked again while the first booking had it
    assert booked_once(facts(second_at=5, first_status="BOOKED")).violations  # both BOOKED now


def test_an_e_mail_whose_message_id_is_folded_is_still_told_by_its_kind(tmp_path: Path) -> None:
    """A cancellation's Message-ID is too long for the header line: it is folded onto the next one."""
    from .saga.facts import read_mail
    (tmp_path / "c.eml").write_bytes(
        b"To: a@example.com\r\nSubject: Booking cancelled - booking " + B5.encode() + b"\r\nMessage-ID:\r\n "
        b"<2ee1fd2c-44d0-4178-bb66-f8cccf53d7fd.cancellation@notifier.ticketing>\r\n\r\nHello\r\n")
    facts = world()
    facts.mail = []
    read_mail(Sources(dsn={}, hold_url="", sim_url="", bootstrap="", groups={}, mail_dir=tmp_path), facts)
    assert facts.mail == [{"booking": B5, "message_id": "<2ee1fd2c-44d0-4178-bb66-f8cccf53d7fd.cancellation"
                                                       "@notifier.ticketing>", "file": "c.eml", "kind": "cancellation"}]


def test_a_hold_booked_at_the_last_moment_of_its_maximum_is_no_breach() -> None:
    """Decided on the transaction's clock before HOLD_MAX, stamped when its event was written a moment later."""
    facts = copy.deepcopy(world())
    facts.bookings[B1]["expires_at"] = at(1200)
    _event(facts, "e6")["occurredAt"] = iso(1200.002)
    assert "timing.hold_max" not in failing(facts)
