"""The customer's language: which message catalogue speaks to him, and how dates, times and money are written.

A customer's `locale` (the directory's, a tag such as `es`, `es_MX` or `vi-VN`) picks the catalogue of its
language; a language we have no catalogue for, or no locale at all, gets English, the language of the texts
in the code (gettext's msgids). Dates and money follow the customer's own locale through Babel (CLDR data), so
`es_MX` reads Mexican number and date forms in Spanish. Times are shown in the cinema's time zone.
"""

from __future__ import annotations

import gettext
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from babel import Locale, UnknownLocaleError
from babel.dates import format_date, format_time, get_datetime_format, get_timezone_name
from babel.numbers import format_currency

FALLBACK = "en"


class InvalidLocale(ValueError):
    """The text is not a locale tag (e.g. `es`, `es_MX`, `vi-VN`)."""


def normalized_locale(text: str) -> str:
    """The locale in Babel's spelling (`es-mx` -> `es_MX`); raises InvalidLocale for what is not one."""
    try:
        return str(Locale.parse(text.strip().replace("-", "_")))
    except (UnknownLocaleError, ValueError) as exc:
        raise InvalidLocale(f"{text!r} is not a locale (e.g. en, es, vi, es_MX): {exc}") from None


@dataclass(frozen=True)
class Language:
    """A customer's language: `gettext` translates a text of the code, `locale` writes numbers and dates."""

    code: str  # the catalogue's language, e.g. "es"
    locale: str  # the customer's locale in Babel's spelling, e.g. "es_MX"
    translations: gettext.NullTranslations

    def gettext(self, message: str) -> str:
        return self.translations.gettext(message)

    def money(self, cents: int, currency: str) -> str:
        return format_currency(Decimal(cents) / 100, currency, locale=self.locale)

    def moment(self, at: datetime, time_zone: str | None) -> str:
        """`at` in the cinema's time zone (UTC when unknown), written as the locale writes a full date and a
        short time, with the zone's name: "lunes, 1 de marzo de 2027, 19:30 (hora estándar de Europa
        occidental)"."""
        zone = _zone(time_zone)
        local = at.astimezone(zone)
        day, time = format_date(local, "full", locale=self.locale), format_time(local, "short", locale=self.locale)
        written = str(get_datetime_format("full", locale=self.locale)).replace("{1}", day).replace("{0}", time)
        return f"{written} ({get_timezone_name(local, 'long', locale=self.locale)})"


def _zone(name: str | None) -> ZoneInfo:
    try:
        return ZoneInfo(name) if name else ZoneInfo("UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


ENGLISH = Language(FALLBACK, FALLBACK, gettext.NullTranslations())


def language_for(locale: str | None, catalogues: Mapping[str, gettext.NullTranslations]) -> Language:
    """The language a customer with this locale is written to: his language if we have its catalogue, else
    English (in his locale's number and date forms when Babel knows the locale, else English ones)."""
    try:
        parsed = Locale.parse((locale or FALLBACK).strip().replace("-", "_"))
    except (UnknownLocaleError, ValueError):
        parsed = Locale.parse(FALLBACK)
    if parsed.language in catalogues:
        return Language(parsed.language, str(parsed), catalogues[parsed.language])
    return ENGLISH
