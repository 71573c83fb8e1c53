"""What every request and response passes first: nosniff on every answer (errors, 304, 500/503, streams), a
request head over MAX_HEADER_BYTES answered 431 in the contract's format, and, under the server `ticketing-run`
starts (uvicorn with HeadLimitedHttpTools), refused while it is read: the parser never holds more than the
limit and the app is never called."""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
import tomllib
from collections.abc import AsyncIterator
from importlib.metadata import version
from pathlib import Path

import orjson
import pytest
import uvicorn
from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse
from fastapi.testclient import TestClient
from ticketing import launcher
from ticketing.api import server as head_limit
from ticketing.api.app import build_app
from ticketing.api.errors import ApiError
from ticketing.api.server import HeadLimitedHttpTools
from ticketing_testing import free_port
from uvicorn.protocols.http import httptools_impl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

LIMIT = 4096
calls: list[str] = []
router = APIRouter()


@router.get("/ok")
async def ok(request: Request) -> dict[str, int]:
    calls.append("ok")
    return {"headers": len(request.headers)}


@router.post("/echo")
async def echo(request: Request) -> Response:
    return Response(await request.body())


@router.get("/same")
async def same() -> Response:
    return Response(status_code=304, headers={"etag": '"1"'})


@router.get("/down")
async def down() -> None:
    raise ConnectionError("postgres is down")


@router.get("/bug")
async def bug() -> None:
    raise RuntimeError("a bug")


@router.get("/gone")
async def gone() -> None:
    raise ApiError(404, "NOT_FOUND", "not found")


@router.get("/events")
async def events() -> StreamingResponse:
    async def frames() -> AsyncIterator[bytes]:
        yield b"event: snapshot\ndata: {}\n\n"
    return StreamingResponse(frames(), media_type="text/event-stream")


def app():  # type: ignore[no-untyped-def]
    return build_app(title="edge", tokens=None, routers=[router], max_body_bytes=65536, max_header_bytes=LIMIT)


def test_every_answer_carries_nosniff_and_a_large_head_gets_431() -> None:
    client = TestClient(app(), raise_server_exceptions=False)
    answers = {"ok": client.get("/ok"), "304": client.get("/same"), "404 unmatched": client.get("/nowhere"),
               "404": client.get("/gone"), "405": client.post("/ok"), "503": client.get("/down"),
               "500": client.get("/bug"), "413": client.post("/echo", content=b"x" * 70000),
               "stream": client.get("/events"), "openapi": client.get("/openapi.json")}
    assert [r.status_code for r in answers.values()] == [200, 304, 404, 404, 405, 503, 500, 413, 200, 200]
    for name, response in answers.items():
        assert response.headers.get("x-content-type-options") == "nosniff", name
        assert response.headers.get_list("x-content-type-options") == ["nosniff"], name  # once
    calls.clear()
    big = client.get("/ok", headers={"Authorization": "Bearer " + "a" * LIMIT})
    assert big.status_code == 431 and big.json()["error"] == "HEADERS_TOO_LARGE" and big.json()["message"]
    assert big.headers["x-content-type-options"] == "nosniff" and big.headers["connection"] == "close"
    long_query = client.get("/ok?q=" + "b" * LIMIT)
    assert long_query.status_code == 431
    assert calls == []  # the route never ran
    assert client.get("/ok", headers={"X-Fine": "c" * (LIMIT // 2)}).status_code == 200


class Counting(HttpToolsProtocol):
    """What reaches uvicorn's own parsing (httptools): its biggest total for one connection."""

    fed: list[int] = []

    def connection_made(self, transport) -> None:  # type: ignore[no-untyped-def]
        super().connection_made(transport)
        self._fed = 0

    def data_received(self, data: bytes) -> None:
        self._fed += len(data)
        Counting.fed.append(self._fed)
        super().data_received(data)


class LimitedCounting(HeadLimitedHttpTools, Counting):
    pass


async def _serve(protocol: type | str) -> tuple[uvicorn.Server, asyncio.Task[None], int]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app(), port=port, http=protocol, log_level="warning", lifespan="off"))
    task = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    return server, task, port


async def _exchange(port: int, head: bytes, piece: int = 16384) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for start in range(0, len(head), piece):
            writer.write(head[start:start + piece])
            try:
                await writer.drain()
            except ConnectionError:
                break  # the server closed: it answered already
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


SERVED_BY_THE_LAUNCHER = launcher.API_SERVER_OPTIONS[launcher.API_SERVER_OPTIONS.index("--http") + 1]


@pytest.mark.parametrize("protocol", [LimitedCounting, Counting, SERVED_BY_THE_LAUNCHER])
async def test_a_one_mib_header_is_refused_while_it_is_read(protocol: type | str) -> None:
    Counting.fed, calls[:] = [], []
    server, task, port = await _serve(protocol)
    try:
        head = b"GET /ok HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + b"A" * 2**20 + b"\r\n\r\n"
        answer = await _exchange(port, head)
        status, _, rest = answer.partition(b"\r\n")
        assert status.startswith(b"HTTP/1.1 431")
        headers, _, body = rest.partition(b"\r\n\r\n")
        assert b"x-content-type-options: nosniff" in headers.lower()
        assert orjson.loads(body)["error"] == "HEADERS_TOO_LARGE"
        assert calls == []
        if protocol is LimitedCounting:
            assert max(Counting.fed) <= LIMIT + 1  # the parser never saw more of the head than the limit
        elif protocol is Counting:
            assert max(Counting.fed) >= 2**20  # plain httptools reads and parses it whole (then the app refuses)
    finally:
        server.should_exit = True
        await task


async def test_heads_within_the_limit_pass_keep_alive_pipelined_and_with_bodies() -> None:
    server, task, port = await _serve(HeadLimitedHttpTools)
    try:
        one = b"GET /ok HTTP/1.1\r\nHost: t\r\nX-Pad: " + b"p" * (LIMIT // 2) + b"\r\n\r\n"
        body = b"y" * 60000
        post = b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        last = b"GET /ok HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        answer = await _exchange(port, one * 3 + post + last, piece=1000)  # 3 heads of half the limit, one body
        assert answer.count(b"HTTP/1.1 200") == 5 and body in answer
        garbage = await _exchange(port, b"NOT HTTP AT ALL\r\n\r\n")
        assert garbage.startswith(b"HTTP/1.1 400") and b"nosniff" in garbage
        assert orjson.loads(garbage.partition(b"\r\n\r\n")[2])["error"] == "BAD_REQUEST"
    finally:
        server.should_exit = True
        await task


async def test_a_large_head_pipelined_behind_a_small_request_is_refused_too() -> None:
    Counting.fed, calls[:] = [], []
    server, task, port = await _serve(LimitedCounting)
    try:
        small = b"GET /ok HTTP/1.1\r\nHost: t\r\n\r\n"
        large = b"GET /ok HTTP/1.1\r\nHost: t\r\nX-Big: " + b"B" * 2**20 + b"\r\n\r\n"
        answer = await _exchange(port, small + large, piece=2**21)  # one write: both in the first reads
        assert answer.startswith(b"HTTP/1.1 200") and b"HTTP/1.1 431" in answer and calls == ["ok"]
        assert max(Counting.fed) <= 2 * (LIMIT + 1)
    finally:
        server.should_exit = True
        await task


ROOT = Path(__file__).resolve().parents[3]


def test_uvicorn_and_httptools_are_the_versions_the_head_limit_was_written_for() -> None:
    """HeadLimitedHttpTools subclasses uvicorn's private protocol class: an upgrade of either (the pin, the lock,
    what is installed) fails here until the tests of this module have passed on it and WRITTEN_FOR says so."""
    locked = tomllib.loads((ROOT / "uv.lock").read_text())["package"]
    assert {p["name"]: p["version"] for p in locked if p["name"] in head_limit.WRITTEN_FOR} == head_limit.WRITTEN_FOR
    assert {name: version(name) for name in head_limit.WRITTEN_FOR} == head_limit.WRITTEN_FOR
    pinned = re.findall(r'"uvicorn\[standard\]==([^"]+)"', (ROOT / "shared/pyproject.toml").read_text())
    assert pinned == [head_limit.WRITTEN_FOR["uvicorn"]]


def test_the_head_limit_overrides_uvicorns_hooks_and_keeps_clear_of_its_names() -> None:
    """A hook uvicorn renames would leave its override never called, silently; an attribute of ours that uvicorn
    starts to use for its own would be overwritten (or overwrite uvicorn's)."""
    ours = {name for name, value in vars(HeadLimitedHttpTools).items()
            if inspect.isfunction(value) and not name.startswith("_")}
    assert ours and {name for name in ours if not hasattr(HttpToolsProtocol, name)} == set()
    tree = ast.parse(inspect.getsource(head_limit))
    set_by_us = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                 and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) and node.value.id == "self"}
    defined_by_us = {name for name in vars(HeadLimitedHttpTools) if name.startswith("_") and not name.startswith("__")}
    uvicorns = inspect.getsource(httptools_impl)
    assert set_by_us and {name for name in set_by_us | defined_by_us if f".{name}" in uvicorns} == set()
