"""BodyLimit: a body over MAX_BODY_BYTES gets the contract's 413 and the app never sees more than the limit."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from ticketing.api.app import build_app
from ticketing.api.hot_path import HotRoute
from ticketing.tokens import TokenVerifier

LIMIT = 1000
router = APIRouter()
read: list[int] = []  # bytes each endpoint call got before its body read ended


async def _drain(request: Request) -> int:
    got = 0
    try:
        async for chunk in request.stream():
            got += len(chunk)
    finally:
        read.append(got)
    return got


@router.post("/normal")
async def normal(request: Request) -> dict[str, int]:
    return {"bytes": await _drain(request)}


@router.post("/hot")
async def hot(request: Request) -> Response:
    return JSONResponse({"bytes": await _drain(request)})


@router.post("/swallows")
async def swallows(request: Request) -> Response:
    try:
        await _drain(request)
    except Exception:
        return JSONResponse({"ok": "the app says all is well"})  # an app that hides the refusal
    return JSONResponse({"ok": "read"})


def client() -> httpx.AsyncClient:
    app = build_app(title="limit", tokens=TokenVerifier("x" * 32), routers=[router], max_body_bytes=LIMIT,
                    hot_routes=[HotRoute("POST", "/hot", hot)])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def chunks(total: int, size: int = 300) -> AsyncIterator[bytes]:
    for start in range(0, total, size):
        yield b"x" * min(size, total - start)


def refused(r: httpx.Response) -> bool:
    return r.status_code == 413 and r.json() == {
        "error": "PAYLOAD_TOO_LARGE", "message": f"the request body is over the limit of {LIMIT} bytes"}


async def test_a_declared_length_over_the_limit_is_refused_without_calling_the_app() -> None:
    read.clear()
    async with client() as c:
        answers = [await c.post(path, content=b"x" * (LIMIT + 1)) for path in ("/normal", "/hot")]
    assert all(refused(r) for r in answers)
    assert read == []  # neither endpoint ran


async def test_a_streamed_body_is_cut_at_the_limit_on_every_path() -> None:
    read.clear()
    async with client() as c:
        answers = [await c.post(path, content=chunks(50 * LIMIT)) for path in ("/normal", "/hot", "/swallows")]
    assert all(refused(r) for r in answers), [r.text for r in answers]
    assert len(read) == 3 and all(n <= LIMIT for n in read)  # the chunk that would pass the limit never came


async def test_a_body_longer_than_its_content_length_never_passes_the_limit() -> None:
    """httpx's in-process transport does not frame the body by its Content-Length, as uvicorn does: the
    tripwire is what stops it here."""
    read.clear()
    async with client() as c:
        answers = [await c.post(path, content=chunks(50 * LIMIT), headers={"Content-Length": "10"})
                   for path in ("/normal", "/hot")]
    assert all(refused(r) for r in answers), [r.text for r in answers]
    assert len(read) == 2 and all(n <= LIMIT for n in read)


async def test_bodies_up_to_the_limit_reach_the_app_whole() -> None:
    async with client() as c:
        declared = await c.post("/hot", content=b"x" * LIMIT)
        streamed = await c.post("/normal", content=chunks(LIMIT))
        empty = await c.post("/normal")
    assert declared.json() == streamed.json() == {"bytes": LIMIT}
    assert empty.json() == {"bytes": 0}
