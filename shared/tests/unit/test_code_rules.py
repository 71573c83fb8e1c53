"""Rules of the production code that no linter states, read from its syntax trees (services/*/src, shared/src)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make"}  # public, despite the underscore


def production() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted([*ROOT.glob("services/*/src/**/*.py"), *ROOT.glob("shared/src/**/*.py")]):
        yield path.relative_to(ROOT), ast.parse(path.read_text())


def imported(tree: ast.Module) -> set[str]:
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return names | {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in NAMEDTUPLE_API


def test_no_module_uses_a_private_api_of_the_redis_client() -> None:
    """An attribute with a leading underscore of anything but our own objects, in a module that talks to Redis
    (redis-py's internals change without notice: a parser's private reader was once called here)."""
    found = [f"{path}:{node.lineno} {ast.unparse(node)}"
             for path, tree in production() if any(m.split(".")[0] in ("redis", "hiredis") for m in imported(tree))
             for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and private(node.attr)
             and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))]
    assert found == []


def bound_here(tree: ast.Module) -> set[str]:
    """The names a module defines, assigns (also as an attribute: `self._x = ...`) or takes as arguments."""
    return ({n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
            | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            | {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
            | {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)})


def reaches_in(node: ast.Attribute | ast.Import | ast.ImportFrom, here: set[str]) -> bool:
    """An attribute, an imported name or an imported module private to another module."""
    if isinstance(node, ast.Attribute):
        return private(node.attr) and node.attr not in here
    if isinstance(node, ast.ImportFrom):
        names = [node.module or "", *(a.name for a in node.names)]
    else:
        names = [a.name for a in node.names]
    return any(private(part) for name in names for part in name.split("."))


def test_no_module_reaches_into_the_private_names_of_another() -> None:
    """A name with a leading underscore belongs to the module that binds it: no production module reads
    another's (ours or a library's) as an attribute, imports it, or imports from a private module (a library
    changes them without notice, and we change ours without looking for callers). An object's own private
    attributes stay open to its module (`other._x` in an `__eq__`)."""
    found = [f"{path}:{node.lineno} {ast.unparse(node)}" for path, tree in production()
             for here in [bound_here(tree)] for node in ast.walk(tree)
             if isinstance(node, ast.Attribute | ast.Import | ast.ImportFrom) and reaches_in(node, here)]
    assert found == []


def test_an_error_answer_is_written_in_one_place() -> None:
    """`{"error": CODE, "message": text, ...}` is written by ticketing.api.errors.ApiError alone; every route,
    middleware and protocol answers through it (an adapter may read another service's such body)."""
    found = [f"{path}:{node.lineno}" for path, tree in production()
             if "entrypoints" in path.parts or "api" in path.parts
             for node in ast.walk(tree) if isinstance(node, ast.Dict)
             and {"error", "message"} <= {k.value for k in node.keys if isinstance(k, ast.Constant)}
             and not any(isinstance(v, ast.Dict) for v in node.values)]  # a JSON Schema of the body is not one
    assert [place.split(":")[0] for place in found] == ["shared/src/ticketing/api/errors.py"], found


MAX_MODULE_LINES = 250


def test_no_production_module_is_over_250_lines() -> None:
    """No exception: a module that grows past the limit is split by concern."""
    sizes = {str(path): len((ROOT / path).read_text().splitlines()) for path, _ in production()}
    assert {path: lines for path, lines in sizes.items() if lines > MAX_MODULE_LINES} == {}
