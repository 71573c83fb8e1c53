"""A dependency down while a route runs is answered 503 UNAVAILABLE with Retry-After, and the request's metrics
and access log say 503 too (not the 500 a catch-all handler outside the middlewares would leave them with)."""

from __future__ import annotations

import asyncpg
from fastapi import APIRouter
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY
from ticketing.api.app import build_app

router = APIRouter()


@router.get("/lost-connection")
async def lost_connection() -> None:
    raise asyncpg.InternalClientError("cannot switch to state 12; another operation (2) is in progress")


@router.get("/bug")
async def bug() -> None:
    raise ZeroDivisionError("a bug")


def counted(route: str, status: str) -> float:
    labels = {"service": "errors-test", "route": route, "method": "GET", "status": status}
    return REGISTRY.get_sample_value("ticketing_http_requests_total", labels) or 0.0


def test_a_dependency_down_is_a_503_for_the_client_and_for_the_metrics() -> None:
    app = build_app(title="errors-test", tokens=None, routers=[router], max_body_bytes=1024)
    before = counted("/lost-connection", "503"), counted("/lost-connection", "500")
    with TestClient(app, raise_server_exceptions=False) as client:
        r = client.get("/lost-connection")
    assert r.status_code == 503 and r.json()["error"] == "UNAVAILABLE" and r.headers["Retry-After"] == "1"
    assert (counted("/lost-connection", "503"), counted("/lost-connection", "500")) == (before[0] + 1, before[1])


def test_a_bug_is_still_a_500_internal() -> None:
    app = build_app(title="errors-test", tokens=None, routers=[router], max_body_bytes=1024)
    with TestClient(app, raise_server_exceptions=False) as client:
        r = client.get("/bug")
    assert r.status_code == 500 and r.json()["error"] == "INTERNAL"
