"""The message catalogues (notifier/locale) cover every text of the code, in every language, with the same
placeholders; they compile (Babel) into what the notifier loads; the template is what the code extracts
(`make i18n` regenerates it and merges new texts into each language)."""

from __future__ import annotations

import re
from pathlib import Path

import notifier
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po
from notifier.adapters.catalogues import LOCALE_DIR, catalogue_path, languages, load_catalogues

SOURCE = Path(notifier.__file__).resolve().parent
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def texts_of_the_code() -> set[str]:
    return {message for _, _, message, _, _ in extract_from_dir(str(SOURCE)) if isinstance(message, str)}


def test_there_are_spanish_and_vietnamese_catalogues() -> None:
    assert {"es", "vi"} <= set(languages())
    assert set(load_catalogues()) == set(languages())


def test_every_text_of_the_code_is_translated_in_every_catalogue_with_its_placeholders() -> None:
    texts = texts_of_the_code()
    assert len(texts) > 30
    for language in languages():
        with catalogue_path(language).open("rb") as po:
            catalog = read_po(po)
        entries = {m.id: m for m in catalog if m.id}
        assert set(entries) == texts, (language, "missing:", texts - set(entries), "stale:", set(entries) - texts)
        for text, entry in entries.items():
            assert entry.string and not entry.fuzzy, (language, text)
            assert set(PLACEHOLDER.findall(str(entry.string))) == set(PLACEHOLDER.findall(text)), (language, text)


def test_the_template_is_what_the_code_says() -> None:
    with (LOCALE_DIR / "notifier.pot").open("rb") as pot:
        assert {m.id for m in read_po(pot) if m.id} == texts_of_the_code(), "run `make i18n`"


def test_the_compiled_catalogues_translate() -> None:
    catalogues = load_catalogues()
    assert catalogues["es"].gettext("Seats:") == "Asientos:"
    assert catalogues["vi"].gettext("Seats:") == "Ghế:"
    assert catalogues["es"].gettext("a text no catalogue has") == "a text no catalogue has"
