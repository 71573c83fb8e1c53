"""The notifier's message catalogues: notifier/locale/<language>/LC_MESSAGES/notifier.po, compiled by Babel
when the process loads them (no compiled .mo file is kept in the repository or needs a build step).

English is the language of the texts in the code (gettext's msgids) and has no catalogue. A fuzzy or empty
translation is left out by the compiler, so that text falls back to English rather than to a wrong one;
tests/unit/test_catalogues.py keeps every catalogue complete.
"""

from __future__ import annotations

import gettext
import io
from functools import cache
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

LOCALE_DIR = Path(__file__).resolve().parents[1] / "locale"
DOMAIN = "notifier"


def catalogue_path(language: str) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def languages() -> list[str]:
    return sorted(p.parent.parent.name for p in LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))


def compile_catalogue(language: str) -> gettext.GNUTranslations:
    with catalogue_path(language).open("rb") as po:
        catalog = read_po(po, locale=language, domain=DOMAIN)
    mo = io.BytesIO()
    write_mo(mo, catalog, use_fuzzy=False)
    mo.seek(0)
    return gettext.GNUTranslations(mo)


@cache
def load_catalogues() -> dict[str, gettext.NullTranslations]:
    """language -> its compiled catalogue, for every catalogue in notifier/locale (read once per process)."""
    return {language: compile_catalogue(language) for language in languages()}
