"""What the README and docs/ tell an operator or a consumer is true of the code: every `make` target they name
exists and `make help` lists every target; the documented log filter finds a line the services write; the
`--service` values the runbooks pass are the CLI's; every log action they tell an operator to look for is one the code
writes; the README's diagram names every event the notifier
consumes; the partition counts in the consumer guide are the catalogue's, the chart's and values-external's;
every `ticketing` command, subcommand and option the docs name is the CLI's; the consumer guide installs what
the example consumer imports before it runs it."""

from __future__ import annotations

import argparse
import json
import logging
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml
from notifier.entrypoints import consumer as notifier_consumer
from ticketing.cli import build_parser
from ticketing.events.topics import TOPICS
from ticketing.kafka import topic_configs
from ticketing.logs import configure_logging, log_action
from ticketing.settings import SERVICE_DATABASES, KafkaSettings

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
TARGET = re.compile(r"^([a-z][a-z0-9-]*):", re.MULTILINE)


def code(text: str) -> list[str]:
    """The fenced blocks and the inline code spans of a Markdown text."""
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    rest = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return fenced + re.findall(r"`([^`\n]+)`", rest)


def makefile_targets() -> set[str]:
    return set(TARGET.findall((ROOT / "Makefile").read_text()))


def test_every_make_target_the_docs_name_exists() -> None:
    targets, missing = makefile_targets(), []
    for doc in DOCS:
        for snippet in code(doc.read_text()):
            for name, glob in re.findall(r"(?<![\w/.-])make\s+(?:-\S+\s+)*([a-z][a-z0-9-]*)([*<]?)", snippet):
                if not glob and name not in targets:  # `make bench-*`, `make bench-<name>`: a family
                    missing.append(f"{doc.relative_to(ROOT)}: make {name}")
    assert not missing, missing


def test_make_help_lists_every_target() -> None:
    out = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    listed = set(re.findall(r"^\s+make (\S+)", out, re.MULTILINE))
    assert makefile_targets() - listed == set()


def test_every_log_action_the_docs_and_the_alerts_name_is_one_the_code_writes() -> None:
    """`action=seatmap.numbering_failed` in a runbook: the name of a `log_action` call in a service or the shared
    library (its name a string literal there)."""
    sources = "\n".join(p.read_text() for root in (ROOT / "shared" / "src", *(ROOT / "services").glob("*/src"))
                        for p in root.rglob("*.py"))
    texts = {str(d.relative_to(ROOT)): d.read_text() for d in DOCS}
    texts["deploy/observability/alerts.yaml"] = (ROOT / "deploy" / "observability" / "alerts.yaml").read_text()
    named = {(where, name.rstrip(".")) for where, text in texts.items()
             for name in re.findall(r"action=([a-z_]+\.[a-z_.]+)", text)}
    assert {"seatmap.numbering_failed", "outbox.relay_leading"} <= {name for _, name in named}
    assert not [(where, name) for where, name in sorted(named) if f'"{name}"' not in sources]


def _operations() -> str:
    return (ROOT / "docs" / "operations.md").read_text()


def test_the_documented_log_filter_finds_the_line_a_service_writes(tmp_path: Path, capfd) -> None:  # type: ignore[no-untyped-def]
    configure_logging("payment-service")
    try:
        log_action(logging.getLogger("payment_service.money"), "money.unresolved", level=logging.ERROR)
        log_action(logging.getLogger("payment_service.money"), "refund.failed", level=logging.ERROR)
        lines = capfd.readouterr().out
    finally:
        logging.getLogger().handlers.clear()
    log = tmp_path / "payment-worker.log"
    log.write_text(lines)
    commands = [c for c in code(_operations()) if "money.unresolved" in c and c.startswith(("grep", "jq"))]
    assert len(commands) >= 2, commands
    for command in commands:
        args = [str(log) if a.startswith("var/log/") else a for a in shlex.split(command)]
        found = subprocess.run(args, capture_output=True, text=True).stdout.splitlines()
        assert [json.loads(line)["action"] for line in found] == ["money.unresolved"], command


def test_the_runbooks_pass_the_cli_its_own_service_names() -> None:
    texts = [_operations(), (ROOT / "deploy" / "observability" / "alerts.yaml").read_text()]
    passed = {name for text in texts for name in re.findall(r"--service\s+([^\s`'\"\]]+)", text)}
    placeholders = {"S", "<s>", "<service>"}  # the command reference's own notation
    assert passed - placeholders and passed - placeholders <= set(SERVICE_DATABASES), passed


def test_the_readme_diagram_names_every_event_the_notifier_consumes() -> None:
    source = Path(notifier_consumer.__file__).read_text()
    consumed = set(re.findall(r'"(\w+)": joined\(', source))
    assert consumed >= {"BookingConfirmed", "BookingCancelled"}
    [edge] = [line for line in (ROOT / "README.md").read_text().splitlines() if "N[notifier" in line]
    assert consumed <= set(re.findall(r"\w+", edge))


def test_the_consumer_guide_gives_the_partitions_each_deployment_makes() -> None:
    chart = ROOT / "deploy" / "helm" / "ticketing"
    values = yaml.safe_load((chart / "values.yaml").read_text())["kafka"]["topics"]["partitions"]
    external = yaml.safe_load((chart / "values-external.yaml").read_text())["kafka"]["topics"]["partitions"]
    rows = {
        m[0]: m[1]
        for m in re.findall(
            r"^\| `([\w.-]+)` \|[^|]*\| ([^|]+) \|", (ROOT / "docs" / "events" / "README.md").read_text(), re.MULTILINE
        )
    }
    for topic in values:
        assert rows[topic].strip() == (
            f"{TOPICS[topic]} locally; the chart {values[topic]}, values-external.yaml {external[topic]}"
        ), topic


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((dict(a.choices) for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def cli_problems(snippet: str) -> list[str]:
    """What a code snippet asks of `ticketing` that the CLI does not have: a command, a subcommand or an option."""
    problems = []
    for command in re.findall(r"(?:^|[\s(`]|bin/)ticketing ([^\n|;&#`]*)", snippet):
        parser, words = build_parser(), command.replace("[", " ").replace("]", " ").split()
        if not words or not re.fullmatch(r"[a-z][a-z-]*", words[0]):
            continue
        if words[0] not in _subcommands(parser):
            problems.append(f"ticketing {words[0]}")
            continue
        for word in words:
            choices = _subcommands(parser)
            if word in choices:
                parser = choices[word]
            elif all(alt in choices for alt in word.split("|")) and "|" in word:
                parser = choices[word.split("|")[0]]
            elif word.startswith("--") and word.split("=")[0] not in _options(parser):
                problems.append(f"ticketing {command.strip()}: {word}")
    return problems


def test_every_ticketing_command_and_option_the_docs_name_exists() -> None:
    problems = [f"{doc.relative_to(ROOT)}: {p}" for doc in DOCS for s in code(doc.read_text()) for p in cli_problems(s)]
    assert not problems, problems


def test_a_command_or_option_the_cli_lacks_is_caught() -> None:
    assert cli_problems("ticketing outbox replay --service hold --id 3 --dry-run") == []
    assert cli_problems("ticketing outbox replay --services hold")
    assert cli_problems(".venv/bin/ticketing topic")
    assert cli_problems("ticketing dlq list --offset 3")


def test_the_consumer_guide_installs_what_the_example_imports_before_running_it() -> None:
    example = ROOT / "docs" / "events" / "examples" / "seat_map_consumer.py"
    imported = {m.split(".")[0] for m in re.findall(r"^\s*(?:from|import) ([\w.]+)", example.read_text(), re.MULTILINE)}
    third_party = imported - set(sys.stdlib_module_names) - {"__future__"}
    assert third_party >= {"aiokafka"}
    [block] = [b for b in code((ROOT / "docs" / "events" / "README.md").read_text()) if "seat_map_consumer.py --" in b]
    lines = [line.split("#")[0].split() for line in block.splitlines()]
    [install] = [words for words in lines if "install" in words]  # a bare `python` has none of them
    run = next(words for words in lines if any(w.endswith("seat_map_consumer.py") for w in words))
    assert third_party <= set(install) and run[0] != "python", (install, run)


def test_the_retention_the_consumer_guide_and_asyncapi_quote_is_what_the_platform_sets() -> None:
    settings = KafkaSettings(_env_file=None)
    chart = yaml.safe_load((ROOT / "deploy" / "helm" / "ticketing" / "values.yaml").read_text())["kafka"]["topics"]
    assert (chart["retentionHours"], chart["dlqRetentionHours"]) == (
        settings.kafka_topic_retention_hours, settings.kafka_dlq_retention_hours)
    guide = (ROOT / "docs" / "events" / "README.md").read_text()
    rows = re.findall(r"^\| ((?:`[\w.-]+`(?:, )?)+) \| `(\w+)` \| (\d+) \((\d+) hours", guide, re.MULTILINE)
    quoted = {t: (policy, ms, hours) for names, policy, ms, hours in rows for t in re.findall(r"`([\w.-]+)`", names)}
    bindings = {c["address"]: c["bindings"]["kafka"]["topicConfiguration"]
                for c in yaml.safe_load((ROOT / "docs" / "events" / "asyncapi.yaml").read_text())["channels"].values()}
    assert set(quoted) == set(TOPICS) == set(bindings)
    for topic in TOPICS:
        configs = topic_configs(topic, settings)
        hours = int(configs["retention.ms"]) // 3_600_000
        assert quoted[topic] == (configs["cleanup.policy"], configs["retention.ms"], str(hours)), topic
        assert bindings[topic] == {"cleanup.policy": [configs["cleanup.policy"]],
                                   "retention.ms": int(configs["retention.ms"])}, topic
