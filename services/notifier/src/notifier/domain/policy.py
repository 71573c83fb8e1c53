"""How the notifier answers a booking event: who its e-mails come from, the key tickets are signed with,
and how many cents paid earn one loyalty point (from settings, by bootstrap.py)."""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


@dataclass(frozen=True)
class NotifyPolicy:
    mail_from: str
    signing_key: Ed25519PrivateKey
    cents_per_point: int = 100
