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


def test_a_session_is_refunded_once_and_never_beyond_what_was_paid() -> None:
    store = SessionStore()
    sid = new(store)  # 1000 cents
    store.pay(sid, "succeeded")
    with pytest.raises(SessionConflict, match="more than"):
        store.refund(sid, "k1", 1001)
    refund = store.refund(sid, "k1", 1000)
    assert store.refund(sid, "k1", 1000) == refund  # the same request again: the same refund
    with pytest.raises(SessionConflict, match="refunded already"):
        store.refund(sid, "k2")  # another key: a second refund of the same charge
    assert store.get(sid).refunds == {"k1": refund}


KEY = "merchant-key-" + "m" * 32


def test_the_merchant_api_and_the_session_list_need_the_api_key() -> None:
    from fastapi.testclient import TestClient
    from gateway_simulator.app import get_application
    from gateway_simulator.config import SimulatorSettings

    client = TestClient(get_application(SimulatorSettings(app_env="production", gateway_api_key=KEY,
                                                          gateway_webhook_secret="w" * 40, _env_file=None)))
    merchant = {"Authorization": f"Bearer {KEY}"}
    body = {"amountCents": 1200, "reference": "pay-1", "callbackUrl": "http://127.0.0.1:9/cb",
            "expiresAt": "2040-01-01T00:00:00Z"}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}):
        refused = client.post("/v1/sessions", json=body, headers=headers)
        assert refused.status_code == 401 and refused.json()["error"] == "UNAUTHORIZED", headers
        assert refused.headers["x-content-type-options"] == "nosniff"
    sid = client.post("/v1/sessions", json=body, headers=merchant).json()["sessionId"]
    assert client.get(f"/v1/sessions/{sid}").status_code == 401
    assert client.post(f"/v1/sessions/{sid}/refunds", json={}).status_code == 401
    assert client.get("/sim/sessions").status_code == 401  # nobody else lists every session
    assert [s["sessionId"] for s in client.get("/sim/sessions", headers=merchant).json()] == [sid]
    # The customer's side needs no key: the session id is the capability, as on a hosted checkout.
    assert client.get(f"/pay/{sid}").status_code == 200
    paid = client.post(f"/sim/sessions/{sid}/pay", json={"outcome": "succeeded", "delivery": "never"})
    assert paid.status_code == 200
    refunds = [client.post(f"/v1/sessions/{sid}/refunds", json={"amountCents": 1200}, headers={**merchant, **k})
               for k in ({"Idempotency-Key": "a"}, {"Idempotency-Key": "a"}, {"Idempotency-Key": "b"})]
    assert [r.status_code for r in refunds] == [200, 200, 409]
    assert refunds[0].json() == refunds[1].json()
    assert client.get(f"/v1/sessions/{sid}", headers=merchant).json()["refundIds"] == [refunds[0].json()["refundId"]]


def test_the_next_refunds_can_be_refused_then_go_through_once() -> None:
    """Test control: a gateway that refuses the first refunds (402) and then accepts; a refused request left
    no refund behind, so the accepted one is the session's only one."""
    from fastapi.testclient import TestClient
    from gateway_simulator.app import get_application
    from gateway_simulator.config import SimulatorSettings

    client = TestClient(get_application(SimulatorSettings(gateway_api_key=KEY, _env_file=None)))
    merchant = {"Authorization": f"Bearer {KEY}"}
    body = {"amountCents": 1200, "reference": "pay-r", "callbackUrl": "http://127.0.0.1:9/cb",
            "expiresAt": "2040-01-01T00:00:00Z"}
    sid = client.post("/v1/sessions", json=body, headers=merchant).json()["sessionId"]
    client.post(f"/sim/sessions/{sid}/pay", json={"outcome": "succeeded", "delivery": "never"})
    assert client.post("/sim/refunds/refuse", json={"count": 2}).status_code == 401
    assert client.post("/sim/refunds/refuse", json={"count": 2}, headers=merchant).json() == {"refusing": 2}
    refund = {**merchant, "Idempotency-Key": "pay-r"}
    answers = [client.post(f"/v1/sessions/{sid}/refunds", json={"amountCents": 1200}, headers=refund)
               for _ in range(4)]
    assert [a.status_code for a in answers] == [402, 402, 200, 200]
    assert answers[0].json()["error"] == "REFUND_REFUSED"
    assert answers[2].json() == answers[3].json()
    assert client.get(f"/v1/sessions/{sid}", headers=merchant).json()["refundIds"] == [answers[2].json()["refundId"]]
