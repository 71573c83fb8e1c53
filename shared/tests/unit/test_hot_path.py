"""HotPaths: a hot endpoint is served ahead of FastAPI's routing with the app's own error handlers."""

from __future__ import annotations

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from ticketing.api.app import build_app
from ticketing.api.errors import ApiError
from ticketing.api.hot_path import HotRoute
from ticketing.tokens import TokenVerifier

router = APIRouter()
seen: list[str] = []


@router.post("/items/{item_id}/buy")
async def buy(request: Request) -> Response:
    item = request.path_params["item_id"]
    seen.append(item)
    if item == "gone":
        raise ApiError(409, "SOLD_OUT", "no more")
    if item == "down":
        raise ConnectionRefusedError("the database is down")  # an OSError: a dependency that is down
    return JSONResponse({"item": item, "app": request.app.title}, status_code=201)


@router.get("/items/{item_id}/buy")
async def read(item_id: str) -> dict[str, str]:
    return {"read": item_id}


def client() -> httpx.AsyncClient:
    app = build_app(title="hot", tokens=TokenVerifier("x" * 32), routers=[router], max_body_bytes=65536,
                    hot_routes=[HotRoute("POST", "/items/{item_id}/buy", buy)])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def test_hot_route_is_served_with_path_params_and_the_app() -> None:
    async with client() as c:
        r = await c.post("/items/a1/buy")
    assert (r.status_code, r.json()) == (201, {"item": "a1", "app": "hot"})


async def test_errors_go_through_the_apps_handlers() -> None:
    async with client() as c:
        sold_out, down = await c.post("/items/gone/buy"), await c.post("/items/down/buy")
    assert (sold_out.status_code, sold_out.json()["error"]) == (409, "SOLD_OUT")
    assert (down.status_code, down.json()["error"]) == (503, "UNAVAILABLE")


async def test_other_methods_and_paths_take_the_normal_route() -> None:
    seen.clear()
    async with client() as c:
        got = await c.get("/items/a1/buy")
        nested = await c.post("/items/a/b/buy")  # one segment per parameter, as Starlette matches
        docs = await c.get("/openapi.json")
    assert got.json() == {"read": "a1"}
    assert nested.status_code == 404 and seen == []
    assert "/items/{item_id}/buy" in docs.json()["paths"]
