"""How the notifier answers a booking event: who its e-mails come from, the key tickets are signed with,
how many cents paid earn one loyalty point, the message catalogues it writes in and the currency of the
amounts (from settings and notifier/locale, by bootstrap.py)."""

from __future__ import annotations

import gettext
from collections.abc import Mapping
from dataclasses import dataclass, field

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from notifier.domain.language import Language, language_for


@dataclass(frozen=True)
class NotifyPolicy:
    mail_from: str
    signing_key: Ed25519PrivateKey
    cents_per_point: int = 100
    catalogues: Mapping[str, gettext.NullTranslations] = field(default_factory=dict)  # language -> catalogue
    currency: str = "EUR"

    def language(self, locale: str | None) -> Language:
        return language_for(locale, self.catalogues)
