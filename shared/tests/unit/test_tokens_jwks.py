"""An identity provider's tokens (RS256, ES256, EdDSA) checked with the keys of its JWKS URL, served here by a
real HTTP server that the tests rotate: keys cached, read again for an unknown kid but not more than once per
cooldown, the algorithm fixed by the key (no RS/HS confusion), our HS256 tokens still accepted, and through an
API: 401 for a bad token, 503 while no key can be read."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from fastapi import APIRouter
from fastapi.testclient import TestClient
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from ticketing.api.app import build_app
from ticketing.api.security import Customer
from ticketing.auth import InvalidToken, issue_token
from ticketing.jwks import JwksKeys, KeysUnavailable
from ticketing.tokens import TokenVerifier

SECRET = "s" * 40
ISSUER, AUDIENCE = "https://idp.example/", "ticketing-api"


class Provider:
    """The identity provider: its signing keys, and the JWKS it publishes (what `publish` last set)."""

    def __init__(self) -> None:
        self.keys: dict[str, tuple[str, Any]] = {}  # kid -> (alg, private key)
        self.published: list[dict[str, Any]] = []
        self.fetches, self.down = 0, False

    def new_key(self, alg: str) -> str:
        kid = f"{alg}-{uuid.uuid4().hex[:8]}"
        private = {"RS256": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
                   "ES256": lambda: ec.generate_private_key(ec.SECP256R1()),
                   "EdDSA": ed25519.Ed25519PrivateKey.generate}[alg]()
        self.keys[kid] = (alg, private)
        return kid

    def publish(self, *kids: str, extra: list[dict[str, Any]] | None = None) -> None:
        to_jwk = {"RS256": RSAAlgorithm.to_jwk, "ES256": ECAlgorithm.to_jwk, "EdDSA": OKPAlgorithm.to_jwk}
        self.published = [{**to_jwk[self.keys[k][0]](self.keys[k][1].public_key(), as_dict=True), "kid": k,
                           "use": "sig"} for k in kids] + (extra or [])

    def token(self, kid: str, **claims: Any) -> str:
        alg, private = self.keys[kid]
        now = int(time.time())
        body = {"sub": "7", "role": "customer", "iss": ISSUER, "aud": AUDIENCE, "exp": now + 300, **claims}
        return jwt.encode(body, private, algorithm=alg, headers={"kid": kid})


@pytest.fixture
def provider() -> Iterator[tuple[Provider, str]]:
    idp = Provider()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            idp.fetches += 1
            if idp.down:
                self.send_response(503)
                self.end_headers()
                return
            body = json.dumps({"keys": idp.published}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield idp, f"http://127.0.0.1:{server.server_port}/.well-known/jwks.json"
    server.shutdown()
    server.server_close()


def verifier(url: str, *, cooldown: float = 30.0, max_age: float = 600.0) -> TokenVerifier:
    return TokenVerifier(SECRET, jwks=JwksKeys(url, cooldown=cooldown, max_age=max_age), issuer=ISSUER,
                         audience=AUDIENCE)


async def test_each_algorithm_is_checked_with_the_providers_key_read_once(provider) -> None:  # type: ignore[no-untyped-def]
    idp, url = provider
    kids = [idp.new_key(alg) for alg in ("RS256", "ES256", "EdDSA")]
    idp.publish(*kids)
    tokens = verifier(url)
    for n, kid in enumerate(kids):
        principal = await tokens.verify(idp.token(kid, sub=str(100 + n)))
        assert (principal.customer_id, principal.role) == (100 + n, "customer")
    assert idp.fetches == 1  # cached
    assert (await tokens.verify(issue_token(SECRET, sub="5", role="service"))).role == "service"  # ours too


async def test_a_rotated_key_is_read_at_once_and_made_up_kids_cannot_make_us_hammer_the_provider(provider) -> None:  # type: ignore[no-untyped-def]
    idp, url = provider
    old = idp.new_key("RS256")
    idp.publish(old)
    tokens = verifier(url, cooldown=0.3)
    await tokens.verify(idp.token(old))
    new = idp.new_key("ES256")
    idp.publish(new)  # the provider rotated: the old key is gone
    time.sleep(0.35)  # a cooldown after the last read
    await tokens.verify(idp.token(new))  # unknown kid: read again, at once
    assert idp.fetches == 2
    for _ in range(50):  # kids nobody publishes, within the cooldown: no more reads
        with pytest.raises(InvalidToken, match="no signing key"):
            await tokens.verify(jwt.encode({"sub": "7"}, idp.keys[new][1], algorithm="ES256",
                                           headers={"kid": uuid.uuid4().hex}))
    with pytest.raises(InvalidToken):
        await tokens.verify(idp.token(old, sub="8"))  # a new token with the retired key
    assert idp.fetches == 2
    time.sleep(0.35)
    with pytest.raises(InvalidToken):
        await tokens.verify(idp.token(old, sub="9"))
    assert idp.fetches == 3  # after the cooldown an unknown kid reads the set again, once


async def test_the_algorithm_is_the_keys_own(provider) -> None:  # type: ignore[no-untyped-def]
    idp, url = provider
    rsa_kid, ec_kid = idp.new_key("RS256"), idp.new_key("ES256")
    oct_key = {"kty": "oct", "kid": "shared", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA", "use": "sig"}
    idp.publish(rsa_kid, ec_kid, extra=[oct_key])
    tokens = verifier(url)
    claims = {"sub": "7", "role": "admin", "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 60}
    public_pem = idp.keys[rsa_kid][1].public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    forged = [
        # HS256 keyed with the provider's public key (the classic confusion): checked with our secret only.
        _hmac_token(claims, public_pem, rsa_kid),
        # Signed by the EC key but naming the RSA key, and the reverse.
        jwt.encode(claims, idp.keys[ec_kid][1], algorithm="ES256", headers={"kid": rsa_kid}),
        jwt.encode(claims, idp.keys[rsa_kid][1], algorithm="RS256", headers={"kid": ec_kid}),
        # A symmetric key the provider publishes is never a key of ours.
        _hmac_token(claims, b"secret-secret-secret-secret-secret", "shared"),
        # No signature at all; an algorithm we do not take.
        jwt.encode(claims, None, algorithm="none", headers={"kid": rsa_kid}),
        jwt.encode(claims, idp.keys[rsa_kid][1], algorithm="RS512", headers={"kid": rsa_kid}),
        # Right key, wrong issuer or audience; a sub in other digits.
        idp.token(rsa_kid, iss="https://evil.example/"), idp.token(rsa_kid, aud="other"),
        idp.token(rsa_kid, sub="\u0667"),
    ]
    for token in forged:
        with pytest.raises(InvalidToken):
            await tokens.verify(token)
    assert (await tokens.verify(idp.token(rsa_kid, role="admin"))).role == "admin"


def _hmac_token(claims: dict[str, Any], key: bytes, kid: str) -> str:
    """HS256 by hand: PyJWT itself refuses to HMAC with a PEM key (so would an attacker's own code not)."""
    import base64
    import hashlib
    import hmac

    def b64(raw: bytes) -> bytes:
        return base64.urlsafe_b64encode(raw).rstrip(b"=")

    signing_input = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode()) + b"." + b64(
        json.dumps(claims).encode())
    return (signing_input + b"." + b64(hmac.new(key, signing_input, hashlib.sha256).digest())).decode()


async def test_a_provider_that_is_down_keeps_the_keys_read_and_without_any_is_unavailable(provider) -> None:  # type: ignore[no-untyped-def]
    idp, url = provider
    kid = idp.new_key("EdDSA")
    idp.publish(kid)
    idp.down = True
    with pytest.raises(KeysUnavailable):
        await verifier(url).verify(idp.token(kid))
    idp.down = False
    tokens = verifier(url, max_age=0.0)  # read again at every token
    await tokens.verify(idp.token(kid))
    idp.down = True
    assert (await tokens.verify(idp.token(kid, sub="11"))).customer_id == 11  # the keys already read


def test_an_api_answers_401_for_a_bad_token_and_503_while_no_key_can_be_read(provider) -> None:  # type: ignore[no-untyped-def]
    idp, url = provider
    kid = idp.new_key("RS256")
    idp.publish(kid)
    router = APIRouter()

    @router.get("/me")
    async def me(who: Customer) -> dict[str, str]:
        return {"sub": who.sub}

    client = TestClient(build_app(title="t", tokens=verifier(url), routers=[router], max_body_bytes=65536))
    assert client.get("/me", headers={"Authorization": f"Bearer {idp.token(kid)}"}).json() == {"sub": "7"}
    bad = client.get("/me", headers={"Authorization": f"Bearer {idp.token(kid, aud='x')}"})
    assert bad.status_code == 401 and bad.json()["error"] == "UNAUTHORIZED"
    idp.down = True
    down = TestClient(build_app(title="t", tokens=verifier(url), routers=[router], max_body_bytes=65536),
                      raise_server_exceptions=False)  # the 503 is the app's Exception handler's
    r = down.get("/me", headers={"Authorization": f"Bearer {idp.token(kid)}"})
    assert r.status_code == 503 and r.json()["error"] == "UNAVAILABLE"
    assert r.headers["x-content-type-options"] == "nosniff"
