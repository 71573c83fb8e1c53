"""The pages' message catalogues: pages/locale/<language>/LC_MESSAGES/pages.po (gettext, the notifier's toolchain:
Babel), compiled when the process starts into one script the pages load, /pages/assets/catalogues.js, which
defines PAGE_CATALOGUES = {language: {English text: translation}} for pages/i18n.js.

English is the language of the texts in the pages (the msgids) and has no catalogue. A fuzzy or empty translation
is left out, so that text shows in English rather than wrong; tests keep every catalogue complete. `make i18n`
extracts the texts: `_("...")` and `N_("...")` in the scripts (Babel's JavaScript extractor) and the markup's
data-i18n texts and data-i18n-attrs attributes (extract_html below).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import IO, Any

from babel.messages.pofile import read_po

PAGES = Path(__file__).resolve().parent / "pages"
LOCALE_DIR = PAGES / "locale"
DOMAIN = "pages"


def catalogue_path(language: str) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def languages() -> list[str]:
    return sorted(p.parent.parent.name for p in LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))


def translations(language: str) -> dict[str, str]:
    with catalogue_path(language).open("rb") as po:
        catalog = read_po(po, locale=language, domain=DOMAIN)
    return {str(m.id): str(m.string) for m in catalog if m.id and m.string and not m.fuzzy}


def catalogues_script() -> bytes:
    """The script that carries every catalogue (a few kB each): the pages choose their language without a second
    request, and a door scanner without the network keeps them with the page."""
    catalogues = {language: translations(language) for language in languages()}
    return f'"use strict";\nconst PAGE_CATALOGUES = {json.dumps(catalogues, ensure_ascii=False)};\n'.encode()


class _MarkedTexts(HTMLParser):
    """The texts of elements marked data-i18n (their whole text, spaces collapsed, as i18n.js reads it) and the
    attributes named in data-i18n-attrs, with their line numbers."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int, str]] = []
        self._open: list[tuple[str, int, list[str]]] = []  # marked elements being read: tag, line, text parts

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        line = self.getpos()[0]
        for name in (values.get("data-i18n-attrs") or "").split():
            if values.get(name):
                self.found.append((line, str(values[name])))
        if "data-i18n" in values:
            self._open.append((tag, line, []))

    def handle_data(self, data: str) -> None:
        for _, _, parts in self._open:
            parts.append(data)

    def handle_endtag(self, tag: str) -> None:
        if self._open and self._open[-1][0] == tag:
            _, line, parts = self._open.pop()
            self.found.append((line, re.sub(r"\s+", " ", "".join(parts)).strip()))


def extract_html(fileobj: IO[bytes], keywords: Collection[str], comment_tags: Collection[str],
                 options: dict[str, Any]) -> Iterator[tuple[int, str, str, list[str]]]:
    """A Babel extraction method for the pages' markup (pybabel extract -F pages/locale/babel.cfg names it)."""
    parser = _MarkedTexts()
    parser.feed(fileobj.read().decode("utf-8"))
    for line, text in parser.found:
        yield line, "", text, []
