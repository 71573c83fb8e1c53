"""The repository's own documents stay true and stay inside the repository.

- The generated documents (each service's OpenAPI, the configuration reference) are what `make docs` writes from
  the code now: a setting added to a settings class, or removed from the reference, fails here.
- Every settings class of the services and the shared library has its section in the reference.
- No tracked file refers to a file outside the repository (a brief, a design article, a path on a build
  machine): a reader has only the repository.
- Every alert has its runbook in docs/operations.md, and every `ticketing` command is there too.
- The README stays a newcomer's page, and every relative link of the README and docs/ leads to a file.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from ticketing.cli import main as ticketing_cli

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 250


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_documents_are_what_make_docs_writes_now() -> None:
    gen, said = generator(), []
    assert gen.check(gen.outputs(), say=said.append), "out of date, run `make docs`:\n" + "\n".join(said)


def test_every_setting_of_every_settings_class_is_in_the_reference() -> None:
    gen = generator()
    reference = (ROOT / "docs" / "configuration.md").read_text()
    missing = [f"{cls.__name__}.{name} ({gen.env_names(name, field)[0]})"
               for _, spec, _ in gen.SECTIONS for cls in [gen._load(spec)]
               for name, field in cls.model_fields.items() if f"`{gen.env_names(name, field)[0]}`" not in reference]
    assert not missing, f"settings missing from docs/configuration.md (run make docs): {missing}"


def test_a_setting_taken_out_of_the_reference_is_caught(tmp_path: Path) -> None:
    gen = generator()
    reference = gen.configuration()
    row = next(line for line in reference.splitlines() if line.startswith("| `HOLD_TTL_SECONDS`"))
    edited = tmp_path / "configuration.md"
    edited.write_text(reference.replace(row + "\n", ""))
    said: list[str] = []
    assert not gen.check({edited: reference}, say=said.append)
    assert "HOLD_TTL_SECONDS" in "\n".join(said)


def test_every_settings_class_in_the_source_has_a_section() -> None:
    gen = generator()
    listed = [gen._load(spec) for _, spec, _ in gen.SECTIONS]
    declared = []
    for path in [*ROOT.glob("shared/src/**/*.py"), *ROOT.glob("services/*/src/**/*.py")]:
        for name in re.findall(r"^class (\w+)\([^)]*Settings[^)]*\):", path.read_text(), re.MULTILINE):
            package_root = next(p for p in path.parents if p.name == "src")
            module = ".".join(path.relative_to(package_root).with_suffix("").parts)
            declared.append(getattr(importlib.import_module(module), name))
    assert declared, "no settings class found: the pattern above is out of date"
    uncovered = [f"{c.__module__}.{c.__name__}" for c in declared if not any(issubclass(x, c) for x in listed)]
    assert not uncovered, f"settings classes without a section in docs/generate.py SECTIONS: {uncovered}"


# Built from pieces, so that this file does not name what it looks for.
OUTSIDE = [re.compile(p) for p in (
    r"\bDES" + r"IGN(?:\.md|'s)?\b", r"\bRELIA" + r"BILITY(?:\.md|'s)?\b", r"\bSTY" + r"LE\.md\b",
    "LOCAL" + "_INFRA", r"\.\./" + r"shared/", r"(?<![\w.])/" + r"work/", r"\b[Ss]eeds?[ /`]*" + r"`?0\d\d",
    r"\bseeds" + r"/",
)]


def test_no_tracked_file_refers_to_a_file_outside_the_repository() -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    found = []
    for name in files.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file():
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue  # images and other binaries
        for number, line in enumerate(text.splitlines(), 1):
            if any(p.search(line) for p in OUTSIDE):
                found.append(f"{name}:{number}: {line.strip()[:120]}")
    assert not found, "references to files outside the repository:\n" + "\n".join(found)


def test_the_readme_is_a_newcomers_page() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move the detail into docs/"
    text = "\n".join(lines)
    for must in ("make up", "make test", "make demo", "docs/", "/docs"):
        assert must in text, must


def test_every_relative_link_of_the_readme_and_docs_leads_to_a_file() -> None:
    broken = []
    for page in [ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("deploy/**/*.md"),
                 *ROOT.glob("services/*/README.md")]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, f"links to nothing: {broken}"


def test_every_alert_has_its_runbook_and_every_command_its_line_in_operations(capsys) -> None:  # type: ignore[no-untyped-def]
    operations = (ROOT / "docs" / "operations.md").read_text()
    rules = yaml.safe_load((ROOT / "deploy" / "observability" / "alerts.yaml").read_text())
    alerts = [rule["alert"] for group in rules["groups"] for rule in group["rules"] if "alert" in rule]
    assert alerts and not [a for a in alerts if f"### {a}\n" not in operations], "alerts without a runbook section"
    with pytest.raises(SystemExit):
        ticketing_cli(["--help"])
    commands = re.findall(r"\{([a-z,-]+)\}", capsys.readouterr().out)[0].split(",")
    assert commands and not [c for c in commands if f"`ticketing {c}" not in operations], commands
