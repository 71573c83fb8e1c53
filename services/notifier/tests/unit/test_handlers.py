import logging
import uuid

from notifier.domain.messages import Contact
from notifier.domain.policy import NotifyPolicy
from notifier.service_layer.handlers import (
    notify_booking_confirmed,
    notify_booking_failed,
    notify_refund_issued,
)
from notifier.service_layer.metrics import BOOKINGS_WITHOUT_ADDRESS, EMAILS_FAILED
from notifier.service_layer.ports import BuyerContacts
from notifier_fakes import FakeUnitOfWork
from ticketing.events import booking_event
from ticketing.tickets import private_key_from_seed

POLICY = NotifyPolicy("T <t@cinema.example>", private_key_from_seed(
    "bm90aWZpZXItdGVzdC1zZWVkLTMyLWJ5dGVzLWxvbmc="), cents_per_point=100)


def confirmed(booking_id: uuid.UUID, customer_id: int = 7, amount: int = 2450):
    return booking_event("BookingConfirmed", source="test", booking_id=booking_id, showtime_id=42,
                         customer_id=customer_id, data={"holdId": uuid.uuid4(), "seats": ["F5", "F6"],
                                                        "amountCents": amount, "discountCents": 0,
                                                        "paymentId": uuid.uuid4(), "seatMapVersion": 3})


async def test_confirmed_credits_points_and_queues_one_ticket():
    uow = FakeUnitOfWork({7: Contact(7, "ana@example.com", "Ana")})
    booking = uuid.uuid4()
    await notify_booking_confirmed(confirmed(booking), uow, POLICY)
    await notify_booking_confirmed(confirmed(booking), uow, POLICY)  # another event id, same booking
    assert uow.points.points == {booking: 24}
    [row] = uow.emails.rows
    assert row.email is not None and row.rendered is not None
    assert row.email.kind == "ticket" and row.rendered.recipient == "ana@example.com"
    assert str(booking).encode() in row.rendered.message
    assert str(booking) in row.email.event_json  # kept so that an operator's re-queue can render it again


async def test_points_are_computed_from_the_paid_amount(eml):
    """amountCents is what the customer paid after the voucher discount (the event contract, docs/events): a €24.50
    seat bought with a €5.00 voucher earns 19 points, not 24, and the ticket says €19.50 paid."""
    uow = FakeUnitOfWork({7: Contact(7, "ana@example.com", "Ana")})
    booking = uuid.uuid4()
    await notify_booking_confirmed(confirmed(booking, amount=1950), uow, POLICY)
    assert uow.points.points == {booking: 19}
    [row] = uow.emails.rows
    assert row.rendered is not None
    body = eml.parse(row.rendered.message).get_body(("plain",)).get_content()
    assert "Paid: €19.50" in body and "Loyalty points earned: 19" in body
    assert "discount" not in body.lower()  # no discountCents in the event: no discount line


async def test_unknown_customer_gets_points_but_no_email(caplog):
    uow = FakeUnitOfWork({})
    with caplog.at_level(logging.WARNING):
        await notify_booking_confirmed(confirmed(uuid.uuid4(), customer_id=999), uow, POLICY)
    assert len(uow.points.points) == 1 and uow.emails.rows == []
    assert any(getattr(r, "action", "") == "notify.no_contact" for r in caplog.records)


async def test_non_ascii_address_is_queued_with_its_ascii_form():
    uow = FakeUnitOfWork({7: Contact(7, "ana@exämple.com", "José")})
    await notify_booking_confirmed(confirmed(uuid.uuid4()), uow, POLICY)
    [row] = uow.emails.rows
    rendered = row.rendered
    assert rendered is not None
    assert rendered.recipient == "ana@exämple.com" and rendered.ascii_recipient == "ana@xn--exmple-cua.com"
    assert rendered.ascii_message is not None and rendered.ascii_message.isascii()


async def test_unrenderable_email_is_recorded_failed_and_the_points_stay(caplog):
    """Issue 11: the credit never depends on the e-mail; the handler must not raise (a raise would retry
    the event, dead-letter it and roll the credit back)."""
    uow = FakeUnitOfWork({7: Contact(7, "not an address", "Ana"),
                           8: Contact(8, "ana@example.com", "Ana\r\nBcc: everyone@example.com")})
    before = {r: EMAILS_FAILED.labels(r)._value.get() for r in ("invalid_address", "unrenderable")}
    first, second = uuid.uuid4(), uuid.uuid4()
    with caplog.at_level(logging.ERROR):
        await notify_booking_confirmed(confirmed(first, customer_id=7), uow, POLICY)
        await notify_booking_confirmed(confirmed(second, customer_id=8), uow, POLICY)
    assert uow.points.points == {first: 24, second: 24}
    assert all(r.status == "FAILED" and r.rendered is None for r in uow.emails.rows)  # nothing to send
    reasons = {r.email.booking_id: r.reason for r in uow.emails.rows if r.email}
    assert reasons == {first: "invalid_address", second: "unrenderable"}
    assert all(r.error for r in uow.emails.rows)
    assert [getattr(r, "reason", "") for r in caplog.records if getattr(r, "action", "") == "email.failed"] == [
        "invalid_address", "unrenderable"]
    assert {r: EMAILS_FAILED.labels(r)._value.get() - before[r] for r in before} == {
        "invalid_address": 1, "unrenderable": 1}


async def test_refund_and_failed_queue_their_kinds():
    uow = FakeUnitOfWork({7: Contact(7, "ana@example.com", "Ana")})
    booking = uuid.uuid4()
    common = {"source": "test", "booking_id": booking, "showtime_id": 42, "customer_id": 7}
    await notify_booking_failed(booking_event("BookingFailed", data={
        "paymentId": uuid.uuid4(), "reason": "HOLD_EXPIRED"}, **common), uow, POLICY)
    await notify_refund_issued(booking_event("RefundIssued", data={
        "paymentId": uuid.uuid4(), "amountCents": 2450, "refundId": "re_1"}, **common), uow, POLICY)
    assert sorted(r.email.kind for r in uow.emails.rows if r.email) == ["booking_failed", "refund"]
    assert uow.points.points == {}


class ProviderContacts(BuyerContacts):
    """hold-service's buyer contacts as the handlers see them (the HTTP adapter is tested end to end, tests/idp)."""

    def __init__(self, contacts: dict[uuid.UUID, Contact]) -> None:
        self.contacts, self.asked = contacts, 0

    async def of_booking(self, booking_id: uuid.UUID, customer_id: int) -> Contact | None:
        self.asked += 1
        return self.contacts.get(booking_id)


async def test_the_ticket_goes_to_the_providers_address_when_the_directory_has_none():
    booking = uuid.uuid4()
    uow = FakeUnitOfWork({})
    uow.contacts = ProviderContacts({booking: Contact(7, "alice@example.com", "Alice", "es")})
    await notify_booking_confirmed(confirmed(booking), uow, POLICY)
    [row] = uow.emails.rows
    assert row.rendered is not None and row.rendered.recipient == "alice@example.com"
    assert uow.customers.missing == {}


async def test_the_directory_overrides_the_providers_address():
    booking = uuid.uuid4()
    uow = FakeUnitOfWork({7: Contact(7, "desk@example.com", "Ana")})
    uow.contacts = contacts = ProviderContacts({booking: Contact(7, "alice@example.com", "Alice", "es")})
    await notify_booking_confirmed(confirmed(booking), uow, POLICY)
    [row] = uow.emails.rows
    assert row.rendered is not None and row.rendered.recipient == "desk@example.com" and contacts.asked == 0


async def test_a_booking_with_no_address_anywhere_is_recorded_and_counted_once():
    booking, event = uuid.uuid4(), confirmed(uuid.uuid4())
    uow = FakeUnitOfWork({})
    uow.contacts = ProviderContacts({booking: Contact(7, "other@example.com", "Other")})
    before = BOOKINGS_WITHOUT_ADDRESS.labels("BookingConfirmed")._value.get()
    await notify_booking_confirmed(event, uow, POLICY)
    await notify_booking_confirmed(event, uow, POLICY)  # the same event again (a redelivery): counted once
    assert uow.emails.rows == [] and list(uow.customers.missing) == [event.eventId]
    assert BOOKINGS_WITHOUT_ADDRESS.labels("BookingConfirmed")._value.get() == before + 1
