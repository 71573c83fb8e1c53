"""What the command-line tools share: argparse with sub-commands, and the wired service for one command."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from notifier.bootstrap import bootstrap
from notifier.config import NotifierSettings
from notifier.service_layer.ports import Deps

T = TypeVar("T")


def command_parser(prog: str, doc: str | None) -> tuple[argparse.ArgumentParser, Any]:
    """The parser (module docstring as help) and its required sub-commands."""
    parser = argparse.ArgumentParser(prog=prog, description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser, parser.add_subparsers(dest="command", required=True)


async def with_deps(work: Callable[[Deps], Awaitable[T]], settings: NotifierSettings | None = None) -> T:
    service = await bootstrap(settings)
    try:
        return await work(service.deps)
    finally:
        await service.close()


def run(work: Callable[[Deps], Awaitable[T]]) -> T:
    """`work` on the service wired from the environment (NOTIFIER_DATABASE_URL, .env)."""
    return asyncio.run(with_deps(work))
