import logging
import uuid

from notifier.adapters.repository import NotifierRepository, QueuedEmail
from notifier.domain.messages import Contact
from notifier.domain.tickets import private_key_from_seed
from notifier.service_layer.handlers import (
    NotifyPolicy,
    notify_booking_confirmed,
    notify_booking_failed,
    notify_refund_issued,
)
from ticketing.events import booking_event

POLICY = NotifyPolicy("T <t@cinema.example>", private_key_from_seed(
    "bm90aWZpZXItdGVzdC1zZWVkLTMyLWJ5dGVzLWxvbmc="), cents_per_point=100)


class FakeRepository(NotifierRepository):
    def __init__(self, contacts: dict[int, Contact]) -> None:
        self.contacts = contacts
        self.points: dict[uuid.UUID, int] = {}
        self.emails: dict[tuple[uuid.UUID, str], QueuedEmail] = {}

    async def get_customer(self, customer_id: int) -> Contact | None:
        return self.contacts.get(customer_id)

    async def credit_points(self, booking_id, customer_id, event_id, amount_cents, points) -> bool:
        if booking_id in self.points:
            return False
        self.points[booking_id] = points
        return True

    async def enqueue_email(self, email: QueuedEmail) -> bool:
        return self.emails.setdefault((email.event_id, email.kind), email) is email


def confirmed(booking_id: uuid.UUID, customer_id: int = 7):
    return booking_event("BookingConfirmed", source="test", booking_id=booking_id, showtime_id=42,
                         customer_id=customer_id, data={"holdId": uuid.uuid4(), "seats": ["F5", "F6"],
                                                        "amountCents": 2450, "discountCents": 0,
                                                        "paymentId": uuid.uuid4(), "seatMapVersion": 3})


async def test_confirmed_credits_points_and_queues_one_ticket():
    repo = FakeRepository({7: Contact(7, "ana@example.com", "Ana")})
    booking = uuid.uuid4()
    await notify_booking_confirmed(confirmed(booking), repo, POLICY)
    await notify_booking_confirmed(confirmed(booking), repo, POLICY)  # another event id, same booking
    assert repo.points == {booking: 24}
    [email] = repo.emails.values()
    assert email.kind == "ticket" and email.recipient == "ana@example.com"
    assert str(booking).encode() in email.message


async def test_unknown_customer_gets_points_but_no_email(caplog):
    repo = FakeRepository({})
    with caplog.at_level(logging.WARNING):
        await notify_booking_confirmed(confirmed(uuid.uuid4(), customer_id=999), repo, POLICY)
    assert len(repo.points) == 1 and repo.emails == {}
    assert any(getattr(r, "action", "") == "notify.no_contact" for r in caplog.records)


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
