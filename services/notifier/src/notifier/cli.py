"""What the operator command-line tools share: one connection per command, argparse with sub-commands."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg

T = TypeVar("T")


async def on_connection(dsn: str, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
    conn = await asyncpg.connect(dsn)
    try:
        return await work(conn)
    finally:
        await conn.close()


def command_parser(prog: str, doc: str | None) -> tuple[argparse.ArgumentParser, Any]:
    """The parser (module docstring as help) and its required sub-commands."""
    parser = argparse.ArgumentParser(prog=prog, description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser, parser.add_subparsers(dest="command", required=True)
