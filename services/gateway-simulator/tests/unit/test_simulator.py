"""The simulator's session rules, and its signature matching payment-service's verifier."""

import time

import pytest
from gateway_simulator.model import SessionConflict, SessionStore
from gateway_simulator.signing import signature_header


def new(store: SessionStore, ref: str = "p1", ttl: float = 60) -> str:
    return store.create(reference=ref, amount_cents=1000, callback_url="http://x",
                        expires_at=time.time() + ttl).session_id


def test_create_is_idempotent_on_reference() -> None:
    store = SessionStore()
    assert new(store, "p1") == new(store, "p1") != new(store, "p2")


def test_open_session_expires_lazily_and_cannot_be_paid() -> None:
    store = SessionStore()
    sid = new(store, ttl=-1)
    assert store.get(sid).status == "expired"
    with pytest.raises(SessionConflict):
        store.pay(sid, "succeeded")


def test_a_paid_session_stays_paid_and_refunds_are_idempotent() -> None:
    store = SessionStore()
    sid = new(store)
    store.pay(sid, "succeeded")
    assert store.cancel(sid).status == "paid"
    with pytest.raises(SessionConflict):
        store.pay(sid, "failed")
    assert store.refund(sid, "k") == store.refund(sid, "k")


def test_signature_header_verifies_with_the_merchant_code() -> None:
    from payment_service.domain.signature import verify  # the two sides must agree on the scheme

    body = b'{"id":"evt_1"}'
    verify("s3cret", signature_header("s3cret", body), body, int(time.time()), 300)
