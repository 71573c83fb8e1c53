import logging
import uuid

from notifier.adapters.repository import NotifierRepository, QueuedEmail, UnrenderableEmail
from notifier.domain.messages import Contact
from notifier.domain.rendering import RenderedEmail
from notifier.domain.tickets import private_key_from_seed
from notifier.service_layer.handlers import (
    NotifyPolicy,
    notify_booking_confirmed,
    notify_booking_failed,
    notify_refund_issued,
)
from notifier.service_layer.metrics import EMAILS_FAILED
from ticketing.events import booking_event

POLICY = NotifyPolicy("T <t@cinema.example>", private_key_from_seed(
    "bm90aWZpZXItdGVzdC1zZWVkLTMyLWJ5dGVzLWxvbmc="), cents_per_point=100)


class FakeRepository(NotifierRepository):
    def __init__(self, contacts: dict[int, Contact]) -> None:
        self.contacts = contacts
        self.points: dict[uuid.UUID, int] = {}
        self.emails: dict[tuple[uuid.UUID, str], tuple[QueuedEmail, RenderedEmail]] = {}
        self.failed: dict[tuple[uuid.UUID, str], UnrenderableEmail] = {}

    async def get_customer(self, customer_id: int) -> Contact | None:
        return self.contacts.get(customer_id)

    async def credit_points(self, booking_id, customer_id, event_id, amount_cents, points) -> bool:
        if booking_id in self.points:
            return False
        self.points[booking_id] = points
        return True

    async def enqueue_email(self, email: QueuedEmail, rendered: RenderedEmail) -> bool:
        key = (email.event_id, email.kind)
        return self.emails.setdefault(key, (email, rendered))[0] is email

    async def record_unrenderable(self, failed: UnrenderableEmail) -> bool:
        key = (failed.email.event_id, failed.email.kind)
        return self.failed.setdefault(key, failed) is failed


def confirmed(booking_id: uuid.UUID, customer_id: int = 7, amount: int = 2450):
    return booking_event("BookingConfirmed", source="test", booking_id=booking_id, showtime_id=42,
                         customer_id=customer_id, data={"holdId": uuid.uuid4(), "seats": ["F5", "F6"],
                                                        "amountCents": amount, "discountCents": 0,
                                                        "paymentId": uuid.uuid4(), "seatMapVersion": 3})


async def test_confirmed_credits_points_and_queues_one_ticket():
    repo = FakeRepository({7: Contact(7, "ana@example.com", "Ana")})
    booking = uuid.uuid4()
    await notify_booking_confirmed(confirmed(booking), repo, POLICY)
    await notify_booking_confirmed(confirmed(booking), repo, POLICY)  # another event id, same booking
    assert repo.points == {booking: 24}
    [(email, rendered)] = repo.emails.values()
    assert email.kind == "ticket" and rendered.recipient == "ana@example.com"
    assert str(booking).encode() in rendered.message
    assert str(booking) in email.event_json  # kept so that an operator's re-queue can render it again


async def test_points_are_computed_from_the_paid_amount(eml):
    """amountCents is what the customer paid after the voucher discount (DESIGN.md section 4): a 24.50 EUR
    seat bought with a 5.00 EUR voucher earns 19 points, not 24, and the ticket says 19.50 EUR paid."""
    repo = FakeRepository({7: Contact(7, "ana@example.com", "Ana")})
    booking = uuid.uuid4()
    await notify_booking_confirmed(confirmed(booking, amount=1950), repo, POLICY)
    assert repo.points == {booking: 19}
    [(_, rendered)] = repo.emails.values()
    body = eml.parse(rendered.message).get_body(("plain",)).get_content()
    assert "Paid: 19.50 EUR" in body and "Loyalty points earned: 19" in body
    assert "discount" not in body.lower()  # no discountCents in the event: no discount line


async def test_unknown_customer_gets_points_but_no_email(caplog):
    repo = FakeRepository({})
    with caplog.at_level(logging.WARNING):
        await notify_booking_confirmed(confirmed(uuid.uuid4(), customer_id=999), repo, POLICY)
    assert len(repo.points) == 1 and repo.emails == {}
    assert any(getattr(r, "action", "") == "notify.no_contact" for r in caplog.records)


async def test_non_ascii_address_is_queued_with_its_ascii_form():
    repo = FakeRepository({7: Contact(7, "ana@exämple.com", "José")})
    await notify_booking_confirmed(confirmed(uuid.uuid4()), repo, POLICY)
    [(_, rendered)] = repo.emails.values()
    assert rendered.recipient == "ana@exämple.com" and rendered.ascii_recipient == "ana@xn--exmple-cua.com"
    assert rendered.ascii_message is not None and rendered.ascii_message.isascii()


async def test_unrenderable_email_is_recorded_failed_and_the_points_stay(caplog):
    """Issue 11: the credit never depends on the e-mail; the handler must not raise (a raise would retry
    the event, dead-letter it and roll the credit back)."""
    repo = FakeRepository({7: Contact(7, "not an address", "Ana"),
                           8: Contact(8, "ana@example.com", "Ana\r\nBcc: everyone@example.com")})
    before = {r: EMAILS_FAILED.labels(r)._value.get() for r in ("invalid_address", "unrenderable")}
    first, second = uuid.uuid4(), uuid.uuid4()
    with caplog.at_level(logging.ERROR):
        await notify_booking_confirmed(confirmed(first, customer_id=7), repo, POLICY)
        await notify_booking_confirmed(confirmed(second, customer_id=8), repo, POLICY)
    assert repo.points == {first: 24, second: 24} and repo.emails == {}
    reasons = {f.email.booking_id: f.reason for f in repo.failed.values()}
    assert reasons == {first: "invalid_address", second: "unrenderable"}
    assert all(f.error for f in repo.failed.values())
    assert [getattr(r, "reason", "") for r in caplog.records if getattr(r, "action", "") == "email.failed"] == [
        "invalid_address", "unrenderable"]
    assert {r: EMAILS_FAILED.labels(r)._value.get() - before[r] for r in before} == {
        "invalid_address": 1, "unrenderable": 1}


async def test_refund_and_failed_queue_their_kinds():
    repo = FakeRepository({7: Contact(7, "ana@example.com", "Ana")})
    booking = uuid.uuid4()
    common = {"source": "test", "booking_id": booking, "showtime_id": 42, "customer_id": 7}
    await notify_booking_failed(booking_event("BookingFailed", data={
        "paymentId": uuid.uuid4(), "reason": "HOLD_EXPIRED"}, **common), repo, POLICY)
    await notify_refund_issued(booking_event("RefundIssued", data={
        "paymentId": uuid.uuid4(), "amountCents": 2450, "refundId": "re_1"}, **common), repo, POLICY)
    assert sorted(kind for _, kind in repo.emails) == ["booking_failed", "refund"]
    assert repo.points == {}
