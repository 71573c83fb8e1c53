"""Each function, procedure, trigger and view of the services' SQL is written in one file: a service's
`sql/schema.sql` states its functions and triggers as they are now (ticketing.migrations applies it after the
migrations), so a migration that still carries a copy is a second text of the same rule, one that a reader may
take for the live one and that drifts from it unseen. A migration keeps what it did to the tables; the
database's match with the file is shared/tests/integration/test_schema_files.py's."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DEFINITION = re.compile(r"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:CONSTRAINT\s+)?"
                        r"(FUNCTION|PROCEDURE|TRIGGER|VIEW|MATERIALIZED\s+VIEW)\s+([\w.\"]+)", re.IGNORECASE)
# What must stay defined in more than one file, each with the files and why: a migration that itself runs the
# function, or a trigger a later migration's data change needs before the schema file is applied. Empty now.
HISTORY: dict[str, tuple[set[str], str]] = {}


def sql_files() -> list[Path]:
    return sorted([*ROOT.glob("services/*/src/**/*.sql"), *ROOT.glob("shared/src/**/*.sql")])


def definitions(text: str) -> list[str]:
    """'function name', 'trigger name'... of every CREATE in `text`, comments left out."""
    code = re.sub(r"--[^\n]*", "", text)
    return [" ".join((kind.lower().split()[-1], name.strip('"').lower())) for kind, name in DEFINITION.findall(code)]


def defined_where() -> dict[str, set[str]]:
    where: dict[str, set[str]] = defaultdict(set)
    for path in sql_files():
        for name in definitions(path.read_text()):
            where[name].add(str(path.relative_to(ROOT)))
    return where


def test_the_parser_finds_each_kind_of_definition() -> None:
    assert definitions("-- CREATE FUNCTION commented()\nCREATE OR REPLACE FUNCTION a(x INT)\n"
                       "CREATE CONSTRAINT TRIGGER b AFTER INSERT ON t\ncreate view c AS SELECT 1") == [
        "function a", "trigger b", "view c"]


def test_every_function_and_trigger_is_defined_in_one_sql_file() -> None:
    where = defined_where()
    assert {"function append_seat_map_events", "trigger booking_customer_cap_at_commit"} <= set(where)
    twice = {name: sorted(files) for name, files in where.items() if len(files) > 1 and name not in HISTORY}
    assert twice == {}, "defined in more than one SQL file: keep it in the service's sql/schema.sql alone"


def test_the_history_allow_list_names_only_what_is_still_defined_twice() -> None:
    where = defined_where()
    stale = {name for name, (files, _) in HISTORY.items() if where.get(name) != files or len(files) < 2}
    assert stale == set(), "HISTORY names definitions that are no longer repeated there: drop them from it"
