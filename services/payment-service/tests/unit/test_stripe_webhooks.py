"""Stripe-Signature verification through the SDK (signatures made by the SDK's own test helper), and events
read into commands."""

import json
import time

import pytest
import stripe
from payment_service.adapters.stripe_webhooks import BadSignature, parse, verify

SECRET = "whsec_unit_0123456789abcdef0123456789"
BODY = json.dumps({"id": "evt_1", "object": "event", "type": "checkout.session.completed",
                   "data": {"object": {"id": "cs_1", "client_reference_id": "p-1"}}}).encode()


def header(secret: str = SECRET, t: int | None = None, body: bytes = BODY) -> str:
    return stripe.WebhookSignature.generate_signature_header(body.decode(), secret, timestamp=t)


def test_a_signature_made_by_the_sdk_is_accepted_and_so_is_one_of_several_v1() -> None:
    verify(SECRET, header(), BODY, 300)
    now = int(time.time())
    good = header(t=now).split(",")[1]
    verify(SECRET, f"t={now},v1={'0' * 64},{good}", BODY, 300)  # the secret being rolled: either may match
    verify(SECRET, f"{header(t=now)},v1={'f' * 64}", BODY, 300)


@pytest.mark.parametrize("bad", ["missing", "garbage", "no v1", "wrong secret", "stale", "future", "v0 only",
                                 "one byte changed"])
def test_every_bad_signature_is_refused(bad: str) -> None:
    now = int(time.time())
    good = header(t=now)
    body = BODY
    value: str | None = {"missing": None, "garbage": "nonsense", "no v1": f"t={now}",
                         "wrong secret": header("whsec_other_0123456789abcdef"), "stale": header(t=now - 301),
                         "future": header(t=now + 301), "v0 only": good.replace("v1=", "v0="),
                         "one byte changed": good}[bad]
    if bad == "one byte changed":
        body = BODY.replace(b"cs_1", b"cs_2")
    with pytest.raises(BadSignature):
        verify(SECRET, value, body, 300)


def test_a_body_that_is_not_utf8_is_refused() -> None:
    raw = b"\xff\xfe" + BODY
    with pytest.raises(BadSignature):
        verify(SECRET, f"t={int(time.time())},v1={'0' * 64}", raw, 300)


def event(kind: str, obj: dict[str, object]) -> bytes:
    return json.dumps({"id": "evt_9", "object": "event", "type": kind, "data": {"object": obj}}).encode()


@pytest.mark.parametrize("kind", ["checkout.session.completed", "checkout.session.async_payment_succeeded",
                                  "checkout.session.async_payment_failed", "checkout.session.expired"])
def test_session_events_name_the_session_and_our_payment(kind: str) -> None:
    cmd = parse(event(kind, {"id": "cs_7", "object": "checkout.session", "client_reference_id": "pay-7"}))
    assert cmd is not None and (cmd.event_id, cmd.event_type, cmd.session_id, cmd.reference, cmd.ignored) == (
        "evt_9", kind, "cs_7", "pay-7", False)
    by_metadata = parse(event(kind, {"id": "cs_7", "metadata": {"paymentId": "pay-8"}}))
    assert by_metadata is not None and by_metadata.reference == "pay-8"


def test_refund_events_name_the_refund_and_our_payment() -> None:
    refund = {"id": "re_1", "object": "refund", "status": "succeeded", "metadata": {"paymentId": "pay-1"}}
    cmd = parse(event("refund.updated", refund))
    assert cmd is not None and (cmd.refund_id, cmd.refund_status, cmd.reference) == ("re_1", "succeeded", "pay-1")
    charge = {"id": "ch_1", "object": "charge", "refunded": True, "metadata": {"paymentId": "pay-2"},
              "refunds": {"data": [{"id": "re_2", "status": "succeeded"}]}}
    cmd = parse(event("charge.refunded", charge))
    assert cmd is not None and (cmd.refund_id, cmd.refund_status, cmd.reference) == ("re_2", "succeeded", "pay-2")


def test_other_types_are_ignored_and_a_body_that_is_no_event_is_none() -> None:
    cmd = parse(event("payment_intent.created", {"id": "pi_1"}))
    assert cmd is not None and cmd.ignored
    assert parse(b'{"id": "evt_1"}') is None and parse(b"[]") is None and parse(b"nonsense") is None
