"""An HMAC key is vetted once (ticketing.auth.VettedHmac): PyJWT's check of a key, which refuses an asymmetric key
used as a secret, ran at every token's check; now a secret that passed is kept, and a key refused is refused
every time."""

from __future__ import annotations

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import HMACAlgorithm
from ticketing.auth import ALGORITHM, AUDIENCE, ISSUER, InvalidToken, VettedHmac, decode_claims, issue_token
from ticketing.tokens import TokenVerifier

SECRET = "s" * 40


@pytest.fixture
def vettings(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The keys PyJWT's own HMAC check is asked to vet."""
    seen: list[object] = []
    vet = HMACAlgorithm.prepare_key

    def counted(self: HMACAlgorithm, key: str | bytes) -> bytes:
        seen.append(key)
        return vet(self, key)

    monkeypatch.setattr(HMACAlgorithm, "prepare_key", counted)
    monkeypatch.setattr(jwt.get_algorithm_by_name(ALGORITHM), "_vetted", {})  # fresh for each test
    return seen


def test_every_hs256_check_of_the_process_goes_through_it() -> None:
    assert isinstance(jwt.get_algorithm_by_name(ALGORITHM), VettedHmac)


async def test_a_secret_is_vetted_once_for_every_token_it_checks(vettings: list[object]) -> None:
    verifier = TokenVerifier(SECRET)
    for sub in ("1", "2", "3"):
        assert (await verifier.verify(issue_token(SECRET, sub=sub, role="customer"))).sub == sub
    assert vettings == [SECRET]


def test_a_token_signed_with_another_key_is_still_refused(vettings: list[object]) -> None:
    decode_claims(issue_token(SECRET, sub="1", role="customer"), SECRET, ALGORITHM, issuer=ISSUER, audience=AUDIENCE)
    forged = issue_token("f" * 40, sub="2", role="admin")
    with pytest.raises(InvalidToken, match="Signature verification failed"):
        decode_claims(forged, SECRET, ALGORITHM, issuer=ISSUER, audience=AUDIENCE)


def test_an_asymmetric_key_as_a_secret_is_refused_every_time(vettings: list[object]) -> None:
    public = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    token = issue_token(SECRET, sub="1", role="customer")
    for _ in range(2):
        with pytest.raises(InvalidToken, match="asymmetric key"):
            decode_claims(token, public, ALGORITHM, issuer=ISSUER, audience=AUDIENCE)
    assert vettings.count(public) == 2
    with pytest.raises(InvalidToken, match="must not be empty"):
        decode_claims(token, "", ALGORITHM, issuer=ISSUER, audience=AUDIENCE)


def test_keys_past_the_bound_are_vetted_each_time(vettings: list[object]) -> None:
    keys = [f"{n:040d}" for n in range(VettedHmac.KEYS_KEPT + 1)]
    for _ in range(2):
        for key in keys:
            assert decode_claims(issue_token(key, sub="1", role="customer"), key, ALGORITHM, issuer=ISSUER,
                                 audience=AUDIENCE)["sub"] == "1"
    # each kept key vetted once (its first signature); the last, past the bound, at each signature and check
    assert vettings.count(keys[0]) == 1
    assert vettings.count(keys[-1]) == 4
