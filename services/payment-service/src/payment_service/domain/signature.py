"""Verifying the gateway's `Gateway-Signature` header (Stripe's scheme; docs/security.md).

`t=<unix>,v1=<hex>[,v1=<hex>...]`; the MAC is HMAC-SHA256(secret, "<t>.<raw body>") over the raw bytes
(never a re-serialised body). Several v1 entries allow key rotation; any match is enough. Compared in
constant time so a forger learns nothing from response times.
"""

from __future__ import annotations

import hashlib
import hmac


class BadSignature(Exception):
    pass


def sign(secret: str, body: bytes, timestamp: int) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def _parse(header: str) -> tuple[int, list[str]]:
    timestamp: int | None = None
    macs: list[str] = []
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            raise BadSignature("garbled signature header")
        if key == "t":
            if not (value.isascii() and value.isdigit()) or len(value) > 12 or timestamp is not None:
                raise BadSignature("bad timestamp")
            timestamp = int(value)
        elif key == "v1":
            macs.append(value)
    if timestamp is None or not macs:
        raise BadSignature("missing t or v1")
    return timestamp, macs


def verify(secret: str, header: str | None, body: bytes, now: int, tolerance: int) -> None:
    """Raise BadSignature unless one v1 matches and `t` is within +-tolerance seconds of now."""
    if not header:
        raise BadSignature("missing signature header")
    timestamp, macs = _parse(header)
    if abs(now - timestamp) > tolerance:
        raise BadSignature("timestamp outside tolerance")
    expected = sign(secret, body, timestamp)
    # Check every candidate (no early exit) so timing does not reveal which one matched.
    matched = False
    for mac in macs:
        matched |= hmac.compare_digest(expected.encode(), mac.encode())
    if not matched:
        raise BadSignature("no matching v1 signature")
