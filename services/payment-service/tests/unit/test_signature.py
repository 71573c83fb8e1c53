"""Scenario S1 (docs/reliability.md) at the unit level: every malformed, stale or forged header is refused."""

import pytest
from payment_service.domain.signature import BadSignature, sign, verify

SECRET = "whsec_test_secret_0123456789abcdef"
BODY = b'{"id":"evt_1","type":"payment.succeeded"}'
NOW = 1_800_000_000


def header(t: int = NOW, secret: str = SECRET, body: bytes = BODY) -> str:
    return f"t={t},v1={sign(secret, body, t)}"


def test_a_valid_signature_passes() -> None:
    verify(SECRET, header(), BODY, NOW, 300)


def test_any_of_several_v1_may_match() -> None:
    verify(SECRET, f"t={NOW},v1={'0' * 64},v1={sign(SECRET, BODY, NOW)}", BODY, NOW, 300)


@pytest.mark.parametrize("bad", [
    None, "", "garbage", "t=abc,v1=00", f"t={NOW}", "v1=00", f"t={NOW},v1=", f"t={NOW},t={NOW},v1=00",
    header(secret="wrong-secret"), header(t=NOW - 301), header(t=NOW + 301), header(body=b"{}"),
    f"t={NOW},v0={sign(SECRET, BODY, NOW)}",
])
def test_bad_headers_are_refused(bad: str | None) -> None:
    with pytest.raises(BadSignature):
        verify(SECRET, bad, BODY, NOW, 300)


def test_the_body_is_checked_byte_for_byte() -> None:
    with pytest.raises(BadSignature):
        verify(SECRET, header(), BODY + b" ", NOW, 300)


def test_edges_of_the_tolerance_are_inside() -> None:
    verify(SECRET, header(t=NOW - 300), BODY, NOW, 300)
    verify(SECRET, header(t=NOW + 300), BODY, NOW, 300)
