"""Signed QR tickets: `<base64url(payload)>.<base64url(Ed25519 signature over the payload bytes)>`.

The payload is compact JSON `{"b": bookingId, "s": showtimeId, "seats": [...], "k": keyId}`. A scanner holding
only the public keys verifies a ticket offline; any changed byte of the payload or the signature fails. One key
(QR_SIGNING_KEY) signs them all: the notifier's e-mails and hold-service's list of a customer's bookings give
the same text for one booking (Ed25519 signatures are deterministic).

Rotation: `k` names the signing key by its id, a digest of its public key (`key_id`), inside the signed bytes.
After a rotation the retired public keys stay listed (QR_VERIFY_KEYS), so tickets already sent still verify;
a ticket without `k` (signed before key ids) is tried against every listed key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

# A fixed 32-byte seed for dev runs only (base64); production refuses it (each service's `secrets()`).
DEV_QR_SIGNING_KEY = "ZGV2LW9ubHktcXItc2lnbmluZy1rZXktY2hhbmdlISE="


class InvalidTicket(ValueError):
    """The text is not a ticket this key signed (malformed, tampered or another key)."""


@dataclass(frozen=True)
class TicketPayload:
    booking_id: str
    showtime_id: int
    seats: tuple[str, ...]
    key_id: str | None = field(default=None, compare=False)  # the signing key's id; None: signed before ids

    def to_json(self) -> bytes:
        body: dict[str, Any] = {"b": self.booking_id, "s": self.showtime_id, "seats": list(self.seats)}
        if self.key_id is not None:
            body["k"] = self.key_id
        return json.dumps(body, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> TicketPayload:
        try:
            body: Any = json.loads(raw)
            kid = body.get("k")
            if not (kid is None or isinstance(kid, str)) or not isinstance(body["seats"], list):
                raise TypeError("k must be a string and seats a list")
            return cls(str(body["b"]), int(body["s"]), tuple(str(s) for s in body["seats"]), kid)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InvalidTicket(f"payload is not a ticket: {exc}") from exc


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise InvalidTicket("not base64url") from exc


def private_key_from_seed(seed_b64: str) -> Ed25519PrivateKey:
    seed = base64.b64decode(seed_b64)
    if len(seed) != 32:
        raise ValueError("QR_SIGNING_KEY must be base64 of exactly 32 bytes")
    return Ed25519PrivateKey.from_private_bytes(seed)


def public_key_text(key: Ed25519PrivateKey) -> str:
    """The published verification key: base64url of the 32 raw public-key bytes."""
    return b64url(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))


def public_key_from_text(text: str) -> Ed25519PublicKey:
    raw = unb64url(text.strip())
    if len(raw) != 32:
        raise InvalidTicket("public key must be 32 bytes")
    return Ed25519PublicKey.from_public_bytes(raw)


def key_id(public_key: Ed25519PublicKey) -> str:
    """A key's id: the first 16 characters of base64url(SHA-256 of its raw public bytes)."""
    return b64url(hashlib.sha256(public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)).digest())[:16]


def sign_ticket(payload: TicketPayload, key: Ed25519PrivateKey) -> str:
    """The ticket text of `payload`, naming `key` by its id."""
    raw = replace(payload, key_id=key_id(key.public_key())).to_json()
    return f"{b64url(raw)}.{b64url(key.sign(raw))}"


def verify_ticket(text: str, public_key: Ed25519PublicKey) -> TicketPayload:
    """Return the payload if the signature holds, else raise InvalidTicket with the reason."""
    return TicketKeyring(None, [public_key]).verify(text)


class TicketKeyring:
    """The key tickets are signed with now (None: this process only verifies) and every key they may have been
    signed with (the current one and the retired ones), by id."""

    MAX_TEXT = 4096  # a ticket of 8 seats is about 300 characters

    def __init__(self, signing: Ed25519PrivateKey | None, retired: Iterable[Ed25519PublicKey] = ()) -> None:
        self.signing = signing
        keys = ([signing.public_key()] if signing is not None else []) + list(retired)
        self.keys: dict[str, Ed25519PublicKey] = {key_id(k): k for k in keys}
        self.current_id = key_id(signing.public_key()) if signing is not None else None

    @classmethod
    def of(cls, seed_b64: str, retired_keys: Iterable[str] = ()) -> TicketKeyring:
        """From QR_SIGNING_KEY (base64 seed) and QR_VERIFY_KEYS (base64url public keys)."""
        return cls(private_key_from_seed(seed_b64), [public_key_from_text(k) for k in retired_keys])

    def sign(self, payload: TicketPayload) -> str:
        assert self.signing is not None, "a verifying keyring signs nothing"
        return sign_ticket(payload, self.signing)

    def verify(self, text: str) -> TicketPayload:
        """The payload if a listed key signed it (the one its `k` names), else InvalidTicket with the reason."""
        parts = text.strip().split(".") if len(text) <= self.MAX_TEXT else []
        if len(parts) != 2 or not all(parts):
            raise InvalidTicket("expected '<payload>.<signature>'")
        raw, signature = unb64url(parts[0]), unb64url(parts[1])
        claimed = TicketPayload.from_json(raw)
        candidates = list(self.keys.values()) if claimed.key_id is None else [self.keys.get(claimed.key_id)]
        for key in candidates:
            try:
                if key is not None:
                    key.verify(signature, raw)
                    return claimed
            except InvalidSignature:
                continue
        if claimed.key_id is not None and claimed.key_id not in self.keys:
            raise InvalidTicket(f"signed by an unknown key {claimed.key_id!r} (forged, or a key not listed)")
        raise InvalidTicket("signature does not verify (tampered or another key)")

    def published(self) -> list[dict[str, str]]:
        """Every verification key as a JWK (RFC 8037: OKP, Ed25519), the signing key first."""
        ordered = sorted(self.keys.items(), key=lambda item: item[0] != self.current_id)
        return [{"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": kid,
                 "x": b64url(k.public_bytes(Encoding.Raw, PublicFormat.Raw))} for kid, k in ordered]
