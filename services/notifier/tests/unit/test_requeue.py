"""An operator's re-queue and the directory, on the fake unit of work: the usual fix of a FAILED e-mail."""

import uuid

import pytest
from notifier.config import NotifierSettings
from notifier.domain.addresses import InvalidAddress
from notifier.domain.commands import RequeueEmails, UpsertCustomers
from notifier.domain.messages import Contact
from notifier.domain.policy import NotifyPolicy
from notifier.service_layer.customers import list_customers, upsert_customers
from notifier.service_layer.handlers import notify_refund_issued
from notifier.service_layer.ports import Deps, Mailer
from notifier.service_layer.requeue import requeue_emails
from notifier_fakes import FakeUnitOfWork
from ticketing.events import booking_event
from ticketing.tickets import private_key_from_seed

POLICY = NotifyPolicy("T <t@cinema.example>", private_key_from_seed(
    "bm90aWZpZXItdGVzdC1zZWVkLTMyLWJ5dGVzLWxvbmc="))


class NoMail(Mailer):
    async def send(self, email: object) -> None:
        raise AssertionError("nothing here sends")


def fake_deps(uow: FakeUnitOfWork) -> Deps:
    return Deps(settings=NotifierSettings(), uow=lambda: uow, policy=POLICY, mailer=NoMail())


def refund(customer_id: int):
    return booking_event("RefundIssued", source="test", booking_id=uuid.uuid4(), showtime_id=42,
                         customer_id=customer_id, data={"paymentId": uuid.uuid4(), "amountCents": 1250,
                                                        "refundId": "re_1"})


async def test_fix_the_address_then_retry_renders_it_again_once():
    uow = FakeUnitOfWork({7: Contact(7, "ana@@example.com", "Ana")})  # written before addresses were checked
    deps = fake_deps(uow)
    await notify_refund_issued(refund(7), uow, POLICY)
    [row] = uow.emails.rows
    assert (row.status, row.reason) == ("FAILED", "invalid_address")
    [still] = await requeue_emails(RequeueEmails([row.id]), deps)
    assert not still.done and "still cannot be rendered" in still.note and row.status == "FAILED"
    with pytest.raises(InvalidAddress):  # one bad row: nothing written
        await upsert_customers(UpsertCustomers([Contact(7, "ana@example.com", "Ana"), Contact(8, "nope", "B")]), deps)
    assert await list_customers(deps) == [Contact(7, "ana@@example.com", "Ana")]
    assert await upsert_customers(UpsertCustomers([Contact(7, "ana@Example.COM", "Ana")]), deps) == 1
    assert await list_customers(deps) == [Contact(7, "ana@example.com", "Ana")]  # stored normalized
    [fixed] = await requeue_emails(RequeueEmails([], all_failed=True, reason="invalid_address"), deps)
    assert fixed.done and row.status == "PENDING" and row.rendered is not None
    assert row.rendered.recipient == "ana@example.com"
    [again] = await requeue_emails(RequeueEmails([row.id]), deps)
    assert again.done and again.note == "status PENDING, not FAILED: nothing to do"
    [unknown] = await requeue_emails(RequeueEmails([999]), deps)
    assert not unknown.done and unknown.note == "no such e-mail"
