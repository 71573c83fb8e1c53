"""The simulator's Stripe-shaped rules, and its signatures verified by the Stripe SDK as payment-service does."""

import asyncio
import time

import orjson
import pytest
from fastapi.testclient import TestClient
from gateway_simulator.app import get_application
from gateway_simulator.config import SimulatorSettings
from gateway_simulator.delivery import Deliverer
from gateway_simulator.form import parse_form
from gateway_simulator.model import SessionStore, StripeError
from gateway_simulator.signing import signature_header

KEY = "sk_test_" + "m" * 32
CREATE = {"mode": "payment", "client_reference_id": "pay-1", "metadata": {"paymentId": "pay-1"},
          "line_items": [{"quantity": 1, "price_data": {"currency": "eur", "unit_amount": 1000}}]}


def new(store: SessionStore, key: str | None = None, **extra: object) -> str:
    return store.create({**CREATE, **extra}, "http://sim", key).session_id


def test_create_is_idempotent_on_its_key_and_sums_the_line_items() -> None:
    store = SessionStore()
    assert new(store, "k1") == new(store, "k1") != new(store, "k2")
    two = store.create({**CREATE, "line_items": [*CREATE["line_items"], {"quantity": 2, "price_data": {  # type: ignore[list-item]
        "currency": "eur", "unit_amount": 250}}]}, "http://sim", None)
    assert two.to_stripe()["amount_total"] == 1500 and two.url.endswith(two.session_id)


def test_a_session_stays_open_until_expired_then_cannot_be_paid_nor_expired_again() -> None:
    store = SessionStore()
    sid = new(store)
    assert store.get(sid).status == "open"
    assert store.expire(sid).status == "expired"
    with pytest.raises(StripeError):
        store.pay(sid, "succeeded")
    with pytest.raises(StripeError):
        store.expire(sid)
    assert store.get(new(store, expires_at=int(time.time()) - 1)).status == "expired"  # its own expires_at


def test_a_paid_session_is_refunded_once_and_never_beyond_what_was_paid() -> None:
    store = SessionStore()
    session, _ = store.pay(new(store), "succeeded")
    assert (session.status, session.payment_status, session.intent_status) == ("complete", "paid", "succeeded")
    refund = {"payment_intent": session.intent_id, "amount": 1001}
    with pytest.raises(StripeError, match="greater than"):
        store.refund(refund, "k1")
    _, first, fresh = store.refund({**refund, "amount": 1000}, "k1")
    assert fresh and store.refund({**refund, "amount": 1000}, "k1") == (session, first, False)
    with pytest.raises(StripeError, match="already been refunded"):
        store.refund(refund, "k2")  # another key: a second refund of the same charge


def test_a_failed_payment_completes_the_session_unpaid_and_cannot_be_refunded() -> None:
    store = SessionStore()
    session, _ = store.pay(new(store), "failed")
    assert (session.status, session.payment_status, session.intent_status) == (
        "complete", "unpaid", "requires_payment_method")
    with pytest.raises(StripeError):
        store.refund({"payment_intent": session.intent_id}, "k")


def test_the_signature_is_verified_by_the_stripe_sdk() -> None:
    stripe = pytest.importorskip("stripe")  # payment-service's side of the scheme
    body = b'{"id":"evt_1","object":"event"}'
    stripe.WebhookSignature.verify_header(body.decode(), signature_header("whsec_x", body), "whsec_x", 300)


def test_stripe_form_encoding_is_read_back_nested() -> None:
    assert parse_form(b"line_items[0][price_data][unit_amount]=5&metadata[a]=b&expand[0]=payment_intent") == {
        "line_items": [{"price_data": {"unit_amount": "5"}}], "metadata": {"a": "b"}, "expand": ["payment_intent"]}


def _client() -> TestClient:
    return TestClient(get_application(SimulatorSettings(app_env="production", stripe_api_key=KEY,
                                                         stripe_webhook_secret="w" * 40, _env_file=None)))


FORM = {"mode": "payment", "client_reference_id": "pay-1", "line_items[0][quantity]": "1",
        "line_items[0][price_data][currency]": "eur", "line_items[0][price_data][unit_amount]": "1200"}


def test_the_stripe_api_and_the_session_list_need_the_secret_key() -> None:
    client = _client()
    merchant = {"Authorization": f"Bearer {KEY}"}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}):
        refused = client.post("/v1/checkout/sessions", data=FORM, headers=headers)
        assert refused.status_code == 401 and refused.json()["error"]["type"] == "invalid_request_error", headers
    session = client.post("/v1/checkout/sessions", data=FORM, headers=merchant).json()
    sid = session["id"]
    assert (session["object"], session["livemode"], session["status"], session["amount_total"]) == (
        "checkout.session", False, "open", 1200)
    assert client.get(f"/v1/checkout/sessions/{sid}").status_code == 401
    assert client.post("/v1/refunds", data={"payment_intent": "pi_x"}).status_code == 401
    assert client.get("/sim/sessions").status_code == 401  # nobody else lists every session
    assert [s["sessionId"] for s in client.get("/sim/sessions", headers=merchant).json()] == [sid]
    # The customer's side needs no key: the session id is the capability, as on a hosted checkout.
    assert client.get(f"/pay/{sid}").status_code == 200
    paying = client.post(f"/sim/sessions/{sid}/pay", json={"outcome": "succeeded", "delivery": "never"})
    assert paying.status_code == 200
    paid = client.get(f"/v1/checkout/sessions/{sid}?expand[0]=payment_intent", headers=merchant).json()
    assert (paid["payment_status"], paid["payment_intent"]["status"]) == ("paid", "succeeded")
    refund = {"payment_intent": paid["payment_intent"]["id"], "amount": "1200"}
    answers = [client.post("/v1/refunds", data=refund, headers={**merchant, **k})
               for k in ({"Idempotency-Key": "a"}, {"Idempotency-Key": "a"}, {"Idempotency-Key": "b"})]
    assert [r.status_code for r in answers] == [200, 200, 400]
    assert answers[0].json() == answers[1].json() and answers[0].json()["object"] == "refund"
    assert answers[2].json()["error"]["code"] == "charge_already_refunded"
    assert client.get("/v1/checkout/sessions/cs_nobody", headers=merchant).json()["error"]["code"] == "resource_missing"


def test_the_next_refunds_can_be_refused_then_go_through_once() -> None:
    """Test control: refunds refused (402) and then accepted; a refused request left no refund behind."""
    client = _client()
    merchant = {"Authorization": f"Bearer {KEY}"}
    sid = client.post("/v1/checkout/sessions", data=FORM, headers=merchant).json()["id"]
    client.post(f"/sim/sessions/{sid}/pay", json={"outcome": "succeeded", "delivery": "never"})
    intent = client.get(f"/v1/checkout/sessions/{sid}", headers=merchant).json()["payment_intent"]
    assert client.post("/sim/refunds/refuse", json={"count": 2}).status_code == 401
    assert client.post("/sim/refunds/refuse", json={"count": 2}, headers=merchant).json() == {"refusing": 2}
    answers = [client.post("/v1/refunds", data={"payment_intent": intent}, headers={**merchant, "Idempotency-Key": "r"})
               for _ in range(4)]
    assert [a.status_code for a in answers] == [402, 402, 200, 200]
    assert answers[2].json() == answers[3].json()
    listed = client.get("/sim/sessions", headers=merchant).json()
    assert listed[0]["refundIds"] == [answers[2].json()["id"]]


def test_a_bank_debit_completes_the_session_unpaid_then_the_async_event_settles_it() -> None:
    store = SessionStore()
    session, kind = store.pay(new(store), "processing")
    assert (kind, session.status, session.payment_status, session.intent_status) == (
        "checkout.session.completed", "complete", "unpaid", "processing")
    with pytest.raises(StripeError):
        store.pay(session.session_id, "processing")
    session, kind = store.pay(session.session_id, "succeeded")
    assert (kind, session.payment_status, session.intent_status) == (
        "checkout.session.async_payment_succeeded", "paid", "succeeded")
    with pytest.raises(StripeError):
        store.pay(session.session_id, "failed")


async def test_an_out_of_order_event_arrives_after_the_sessions_next_one() -> None:
    """Stripe does not promise order: the payment's event held back comes after the refund's that followed it."""
    sent: list[str] = []

    class Recording(Deliverer):
        async def _post(self, url: str, body: bytes) -> int | None:
            sent.append(orjson.loads(body)["type"])
            return 200

    store = SessionStore()
    deliverer = Recording(SimulatorSettings(stripe_webhook_secret="w" * 40, _env_file=None))
    session, kind = store.pay(new(store), "succeeded")
    deliverer.schedule(session, kind, session.to_stripe(), "out_of_order", 0)
    await asyncio.sleep(0.05)
    assert sent == []  # held back
    refunded, refund, _ = store.refund({"payment_intent": session.intent_id}, "k")
    deliverer.schedule(refunded, "charge.refunded", store.charge(refunded, refund), "normal", 0)
    for _ in range(100):
        if len(sent) == 2:
            break
        await asyncio.sleep(0.01)
    assert sent == ["charge.refunded", "checkout.session.completed"]
    deliverer.schedule(session, kind, session.to_stripe(), "out_of_order", 0.05)  # nothing follows: sent at its limit
    await asyncio.sleep(0.3)
    assert sent[-1] == "checkout.session.completed" and len(sent) == 3
    await deliverer.close()
