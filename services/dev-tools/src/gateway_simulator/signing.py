"""Stripe-style webhook signing: `t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`."""

from __future__ import annotations

import hashlib
import hmac
import time


def signature_header(secret: str, body: bytes, timestamp: int | None = None) -> str:
    t = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"
