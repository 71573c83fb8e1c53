"""A provider's token read through the claim mapping (ticketing.identity): its role from JWT_ROLES_CLAIM through
JWT_ROLE_MAP, the strongest winning and `service` never taken; our customer id from JWT_CUSTOMER_ID_CLAIM, a
numeric `sub`, or the subject mapped at its first sign-in, with the token's contact handed to the mapping."""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from ticketing.auth import InvalidToken, Principal
from ticketing.identity import ClaimMapping, CustomerIds, ProviderContact
from ticketing.jwks import JwksKeys
from ticketing.settings import TokenSettings
from ticketing.tokens import TokenVerifier

ISSUER, AUDIENCE = "https://idp.example/realms/chain", "ticketing"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
JWKS = {"keys": [{**RSAAlgorithm.to_jwk(KEY.public_key(), as_dict=True), "kid": "k1", "use": "sig"}]}


class Subjects(CustomerIds):
    """The mapping's contract as the verifier uses it: one id per (issuer, subject), the contact passed on."""

    def __init__(self) -> None:
        self.ids: dict[tuple[str, str], int] = {}
        self.contacts: list[ProviderContact] = []

    async def resolve(self, issuer: str, subject: str, contact: ProviderContact) -> int:
        self.contacts.append(contact)
        return self.ids.setdefault((issuer, subject), 10**12 + len(self.ids))


def token(**claims: Any) -> str:
    body = {"sub": "f3b0c1e2-uuid", "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 300, **claims}
    return jwt.encode(body, KEY, algorithm="RS256", headers={"kid": "k1"})


def verifier(mapping: ClaimMapping, ids: CustomerIds | None = None) -> TokenVerifier:
    async def fetch() -> dict[str, Any]:
        return JWKS
    return TokenVerifier("s" * 40, jwks=JwksKeys("https://idp.example/jwks", fetch=fetch), issuer=ISSUER,
                         audience=AUDIENCE, mapping=mapping, customer_ids=ids)


KEYCLOAK = ClaimMapping(roles_claim="realm_access.roles",
                        role_map={"cinema-customer": "customer", "door": "staff", "boss": "admin", "svc": "service"})


async def test_roles_come_from_the_mapped_claim_and_the_strongest_wins() -> None:
    ids = Subjects()
    v = verifier(KEYCLOAK, ids)
    customer = await v.verify(token(realm_access={"roles": ["offline_access", "cinema-customer"]}))
    staff = await v.verify(token(realm_access={"roles": ["cinema-customer", "door"]}))
    admin = await v.verify(token(realm_access={"roles": ["door", "boss"]}))
    assert (customer.role, staff.role, admin.role) == ("customer", "staff", "admin")
    for roles in (["svc"], ["offline_access"], []):  # `service` is only ever our own HS256 token's
        with pytest.raises(InvalidToken):
            await v.verify(token(realm_access={"roles": roles}))


async def test_an_unmapped_provider_uses_our_role_names() -> None:
    v = verifier(ClaimMapping(roles_claim="roles"), Subjects())
    assert (await v.verify(token(roles="staff"))).role == "staff"
    with pytest.raises(InvalidToken):
        await v.verify(token(roles=["service"]))


async def test_a_subject_gets_one_customer_id_and_its_contact_is_passed_on() -> None:
    ids = Subjects()
    v = verifier(KEYCLOAK, ids)
    claims = {"realm_access": {"roles": ["cinema-customer"]}, "email": "ana@example.com", "email_verified": True,
              "name": "Ana Lima", "locale": "es"}
    first = await v.verify(token(**claims))
    again = await v.verify(token(**claims, iat=1))  # another token of the same subject
    other = await v.verify(token(**claims, sub="another-subject"))
    assert first.customer_id == again.customer_id == 10**12 and other.customer_id == 10**12 + 1
    assert ids.contacts[0] == ProviderContact("ana@example.com", True, "Ana Lima", "es")


async def test_a_customer_id_claim_or_a_numeric_sub_is_the_id_itself() -> None:
    claim = verifier(ClaimMapping(roles_claim="roles", customer_id_claim="cinema.customer_id"))
    assert await claim.verify(token(roles="customer", cinema={"customer_id": 42})) == Principal("42", "customer")
    with pytest.raises(InvalidToken):
        await claim.verify(token(roles="customer"))
    numeric = verifier(ClaimMapping(roles_claim="roles"))
    assert (await numeric.verify(token(roles="customer", sub="7"))).customer_id == 7
    with pytest.raises(InvalidToken):  # no mapping configured and a subject that is not a number
        await numeric.verify(token(roles="customer"))


def test_the_mapping_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JWT_ROLE_MAP", '{"door": "staff"}')  # as operators set it: JSON in the environment
    s = TokenSettings(app_env="dev", jwt_roles_claim="realm_access.roles", customer_ids_url="http://127.0.0.1:8001")
    v = TokenVerifier.from_settings(s)
    assert v.mapping == ClaimMapping("realm_access.roles", {"door": "staff"}, "") and v.customer_ids is not None


def test_a_role_map_naming_a_role_we_do_not_have_is_refused_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JWT_ROLE_MAP", '{"door": "staff", "robots": "service"}')
    with pytest.raises(ValueError, match="service"):
        TokenSettings(app_env="dev")
