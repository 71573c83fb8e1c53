"""The pages' message catalogues (pages/locale): every text the pages show (their scripts' _() and N_() calls,
their markup's data-i18n texts and attributes) is translated in every catalogue with the same placeholders; the
template is what the pages say (`make i18n`); the compiled script the pages load carries them all."""

from __future__ import annotations

import json
import re

from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po
from hold_service.entrypoints.api.page_catalogues import (
    LOCALE_DIR,
    PAGES,
    catalogue_path,
    catalogues_script,
    languages,
    translations,
)

PLACEHOLDER = re.compile(r"\{(\w+)\}")


def texts_of_the_pages() -> set[str]:
    with (LOCALE_DIR / "babel.cfg").open() as cfg:
        method_map, options_map = parse_mapping_cfg(cfg)
    return {message for _, _, message, _, _ in extract_from_dir(str(PAGES), method_map, options_map)
            if isinstance(message, str)}


def test_there_are_spanish_and_vietnamese_catalogues() -> None:
    assert {"es", "vi"} <= set(languages())


def test_the_markup_and_the_scripts_are_both_read() -> None:
    texts = texts_of_the_pages()
    assert {"Hold these seats", "Seat map", "paste the output of: make token SUB=7"} <= texts  # markup, attributes
    assert {"Picked: {seats}", "Wheelchair space", "{seat}, {category}, {state}"} <= texts  # _() and N_()


def test_every_text_of_the_pages_is_translated_in_every_catalogue_with_its_placeholders() -> None:
    texts = texts_of_the_pages()
    assert len(texts) > 150
    for language in languages():
        with catalogue_path(language).open("rb") as po:
            catalog = read_po(po)
        entries = {m.id: m for m in catalog if m.id}
        assert set(entries) == texts, (language, "missing:", texts - set(entries), "stale:", set(entries) - texts)
        for text, entry in entries.items():
            assert entry.string and not entry.fuzzy, (language, text)
            assert set(PLACEHOLDER.findall(str(entry.string))) == set(PLACEHOLDER.findall(text)), (language, text)


def test_the_template_is_what_the_pages_say() -> None:
    with (LOCALE_DIR / "pages.pot").open("rb") as pot:
        assert {m.id for m in read_po(pot) if m.id} == texts_of_the_pages(), "run `make i18n`"


def test_the_compiled_script_carries_every_catalogue() -> None:
    script = catalogues_script().decode()
    compiled = json.loads(script.split("const PAGE_CATALOGUES = ", 1)[1].rstrip().rstrip(";"))
    assert set(compiled) == set(languages())
    assert compiled["es"]["Hold these seats"] == "Reservar estos asientos"
    assert compiled["vi"]["Hold these seats"] == "Giữ các ghế này"
    assert compiled["es"] == translations("es")
