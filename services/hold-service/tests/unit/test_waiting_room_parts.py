"""The waiting room's pure parts: the client address behind proxies, tickets and admission tokens, waits."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import jwt
import pytest
from hold_service.adapters.room_credentials import SignedCredentials
from hold_service.domain.waiting_room import AdmissionPass, QueueView, RoomConfig, Ticket, estimated_wait
from hold_service.entrypoints.api.client_address import ClientAddress, limit_key
from ticketing.auth import InvalidToken, issue_token, verify_token

SECRET = "unit-test-secret-unit-test-secret!"


@pytest.mark.parametrize(("trusted", "peer", "xff", "client"), [
    ([], "198.51.100.7", ["1.2.3.4"], "198.51.100.7"),  # no trusted proxy: the header is never read
    (["10.0.0.0/8"], "198.51.100.7", ["1.2.3.4"], "198.51.100.7"),  # the peer is not ours: ignored
    (["10.0.0.0/8"], "10.1.1.1", ["1.2.3.4"], "1.2.3.4"),
    (["10.0.0.0/8"], "10.1.1.1", ["6.6.6.6, 1.2.3.4, 10.2.2.2"], "1.2.3.4"),  # what the client wrote is left of it
    (["10.0.0.0/8"], "10.1.1.1", ["6.6.6.6", "1.2.3.4"], "1.2.3.4"),  # several headers: one list
    (["10.0.0.0/8", "127.0.0.1"], "127.0.0.1", ["10.3.3.3"], "10.3.3.3"),  # only our proxies: the first
    (["10.0.0.0/8"], "10.1.1.1", [], "10.1.1.1"),
    (["10.0.0.0/8"], "10.1.1.1", ["not-an-ip"], "10.1.1.1"),  # a broken proxy of ours: the peer
])
def test_client_address_behind_trusted_proxies(trusted, peer, xff, client) -> None:
    assert ClientAddress(trusted).resolve(peer, xff) == client


def test_ipv6_clients_are_limited_per_64_and_mapped_ipv4_as_ipv4() -> None:
    assert limit_key("2001:db8:1:2:aaaa::1") == limit_key("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert limit_key("2001:db8:1:3::1") != limit_key("2001:db8:1:2::1")
    assert limit_key("::ffff:192.0.2.1") == "192.0.2.1"
    assert limit_key("192.0.2.1") == "192.0.2.1"


def test_tickets_are_signed_and_carry_their_place() -> None:
    creds = SignedCredentials(SECRET)
    ticket = Ticket(showtime_id=42, customer_id=7, nonce="00ff00ff00ff00ff", joined_us=1_700_000_000_123_456)
    text = creds.ticket(ticket)
    assert creds.read_ticket(text) == ticket
    assert "42" not in text and ":" not in text  # opaque
    body, tag = text.split(".")
    forged = creds.ticket(Ticket(42, 8, ticket.nonce, ticket.joined_us)).split(".")[0]
    assert creds.read_ticket(f"{forged}.{tag}") is None  # another customer's body with this tag
    assert creds.read_ticket(f"{body}.{tag[:-2]}AA") is None
    assert creds.read_ticket("garbage") is None and creds.read_ticket("é.é") is None
    assert SignedCredentials("another-secret-another-secret-xx").read_ticket(text) is None


def test_admission_tokens_are_bound_and_expire() -> None:
    creds = SignedCredentials(SECRET)
    slot = int(time.time() * 1000) + 60_000
    token = creds.admission_token(AdmissionPass(customer_id=7, showtime_id=42, slot_ms=slot))
    admission = creds.read_admission_token(token)
    assert admission == AdmissionPass(7, 42, slot) and admission.admits(7, 42)
    assert not admission.admits(8, 42) and not admission.admits(7, 43)
    assert creds.read_admission_token(token) == admission  # remembered, same answer
    lapsed = creds.admission_token(AdmissionPass(7, 42, int(time.time() * 1000) - 1000))
    assert creds.read_admission_token(lapsed) is None
    assert creds.read_admission_token(token[:-3] + "AAA") is None


def test_an_admission_token_is_no_bearer_token_and_the_reverse() -> None:
    creds = SignedCredentials(SECRET)
    token = creds.admission_token(AdmissionPass(7, 42, int(time.time() * 1000) + 60_000))
    with pytest.raises(InvalidToken):
        verify_token(SECRET, token)
    assert creds.read_admission_token(issue_token(SECRET, sub="7", role="customer")) is None
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["purpose"] == "admission" and claims["sub"] == "7" and claims["sid"] == 42


def _view(position: int | None, rate: float = 0.0, **kw) -> QueueView:
    base = dict(state="queued", position=position, slot_ms=0, sold_out=False, rate_per_minute=rate,
                paused_until_ms=0, now_ms=1_000_000, step_due=False)
    return QueueView(**{**base, **kw})  # type: ignore[arg-type]


def test_estimated_wait_from_the_measured_rate_else_the_slowest_turnover() -> None:
    room = RoomConfig(showtime_id=1, enabled=True, active_limit=100, opens_at=None)
    assert estimated_wait(_view(300, rate=600), room, 180) == 30  # 10 admissions/s
    assert estimated_wait(_view(300), room, 180) == 540  # every slot frees at the latest each 180 s
    assert estimated_wait(_view(300, rate=600, paused_until_ms=1_020_000), room, 180) == 50
    assert estimated_wait(_view(300, sold_out=True), room, 180) is None
    opens = datetime.fromtimestamp(1_000, UTC) + timedelta(seconds=90)
    later = RoomConfig(showtime_id=1, enabled=True, active_limit=100, opens_at=opens)
    assert estimated_wait(_view(None, state="pre"), later, 180) == 90  # until the opening
