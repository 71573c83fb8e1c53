"""A token's header is read once per header text (ticketing.tokens.TokenVerifier): our tokens share one header, so
a token seen for the first time pays for its check, not for reading its header again; what the header lets
through is still checked whole, and made-up headers do not grow what is kept."""

from __future__ import annotations

import base64
import json

import jwt
import pytest
from ticketing import tokens
from ticketing.auth import InvalidToken, issue_token
from ticketing.tokens import HEADERS_KEPT, TokenVerifier

SECRET = "s" * 40


@pytest.fixture
def header_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    read = jwt.get_unverified_header

    def counted(token: str) -> dict:
        reads.append(token)
        return read(token)

    monkeypatch.setattr(tokens.jwt, "get_unverified_header", counted)
    return reads


def segment(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


async def test_tokens_under_one_header_have_it_read_once(header_reads: list[str]) -> None:
    verifier = TokenVerifier(SECRET)
    for sub in ("1", "2", "3"):
        assert (await verifier.verify(issue_token(SECRET, sub=sub, role="customer"))).sub == sub
    assert len(header_reads) == 1


async def test_a_known_header_lets_nothing_through_unchecked(header_reads: list[str]) -> None:
    verifier = TokenVerifier(SECRET)
    good = issue_token(SECRET, sub="1", role="customer")
    await verifier.verify(good)
    forged = issue_token("f" * 40, sub="2", role="admin")  # the same header, another key
    assert forged.partition(".")[0] == good.partition(".")[0]
    with pytest.raises(InvalidToken):
        await verifier.verify(forged)
    with pytest.raises(InvalidToken):
        await verifier.verify(good.partition(".")[0])  # the header alone
    with pytest.raises(InvalidToken):
        await verifier.verify(good.rsplit(".", 1)[0] + ".")  # no signature
    assert len(header_reads) == 1


async def test_made_up_headers_are_read_each_time_once_the_bound_is_reached(header_reads: list[str]) -> None:
    verifier = TokenVerifier(SECRET)
    body = segment({"sub": "1"})

    async def refused(n: int) -> None:
        with pytest.raises(InvalidToken):  # alg none: no key checks it
            await verifier.verify(f"{segment({'alg': 'none', 'n': n})}.{body}.")

    for n in range(HEADERS_KEPT + 10):
        await refused(n)
    assert len(header_reads) == HEADERS_KEPT + 10
    await refused(0)  # among the first HEADERS_KEPT: kept
    assert len(header_reads) == HEADERS_KEPT + 10
    await refused(HEADERS_KEPT)  # past the bound: read again
    assert len(header_reads) == HEADERS_KEPT + 11
    with pytest.raises(InvalidToken):  # not a token at all
        await verifier.verify("not-a-token")
