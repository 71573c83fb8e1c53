"""The application factory's startup: what the process holds once started is frozen for the garbage
collector (ticketing.api.app.frozen_after_startup)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest
from fastapi import FastAPI
from ticketing.api.app import build_app


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the other tests' collections stay as they were


class Pool:
    """Stands for what a service's startup makes and keeps: pools, clients, caches."""


async def test_what_startup_made_is_frozen_once_the_service_starts() -> None:
    made: list[Pool] = []

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        made.extend(Pool() for _ in range(1000))
        assert gc.get_freeze_count() == 0  # not before the service's own startup has run
        yield

    app = build_app(title="a-service", tokens=None, routers=[], max_body_bytes=1024, lifespan=lifespan)
    async with app.router.lifespan_context(app):
        assert gc.get_freeze_count() >= len(made) + 1000  # the pools and what was imported before them
        frozen = gc.get_freeze_count()
        gc.collect()  # a full collection leaves them frozen
        assert gc.get_freeze_count() == frozen


async def test_a_service_without_a_lifespan_is_frozen_at_startup_too() -> None:
    app = build_app(title="a-service", tokens=None, routers=[], max_body_bytes=1024)
    async with app.router.lifespan_context(app):
        assert gc.get_freeze_count() > 0


class Cycle:
    def __init__(self) -> None:
        self.me = self  # garbage only a collection frees


async def test_what_startup_made_and_the_app_dropped_is_collected_once_it_stops() -> None:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.cache = Cycle()
        yield

    app = build_app(title="a-service", tokens=None, routers=[], max_body_bytes=1024, lifespan=lifespan)
    async with app.router.lifespan_context(app):
        dropped = weakref.ref(app.state.cache)
        app.state.cache = None
        gc.collect()
        assert dropped() is not None  # frozen: the price, paid only for what startup made
        later = weakref.ref(Cycle())
        gc.collect()
        assert later() is None  # what came after startup is collected as ever
    gc.collect()
    assert dropped() is None  # a process that goes on after its app (a test run) frees them
