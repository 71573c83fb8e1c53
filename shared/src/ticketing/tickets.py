"""Signed QR tickets: `<base64url(payload)>.<base64url(Ed25519 signature over the payload bytes)>`.

The payload is compact JSON `{"b": bookingId, "s": showtimeId, "seats": [...]}`. A scanner holding only
the public key verifies a ticket offline; any changed byte of the payload or the signature fails. One key
(QR_SIGNING_KEY) signs them all: the notifier's e-mails and hold-service's list of a customer's bookings give
the same text for one booking (Ed25519 signatures are deterministic).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
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

    def to_json(self) -> bytes:
        body = {"b": self.booking_id, "s": self.showtime_id, "seats": list(self.seats)}
        return json.dumps(body, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> TicketPayload:
        try:
            body: Any = json.loads(raw)
            return cls(str(body["b"]), int(body["s"]), tuple(str(s) for s in body["seats"]))
        except (ValueError, KeyError, TypeError) as exc:
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


def sign_ticket(payload: TicketPayload, key: Ed25519PrivateKey) -> str:
    raw = payload.to_json()
    return f"{b64url(raw)}.{b64url(key.sign(raw))}"


def verify_ticket(text: str, public_key: Ed25519PublicKey) -> TicketPayload:
    """Return the payload if the signature holds, else raise InvalidTicket with the reason."""
    parts = text.strip().split(".")
    if len(parts) != 2 or not all(parts):
        raise InvalidTicket("expected '<payload>.<signature>'")
    raw, signature = unb64url(parts[0]), unb64url(parts[1])
    try:
        public_key.verify(signature, raw)
    except InvalidSignature:
        raise InvalidTicket("signature does not verify (tampered or another key)") from None
    return TicketPayload.from_json(raw)
