"""FastAPI dependencies: the handlers' `Deps` live on app.state (set by the lifespan)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from payment_service.service_layer.ports import Deps


def _deps(request: Request) -> Deps:
    return request.app.state.deps  # type: ignore[no-any-return]


DepsDep = Annotated[Deps, Depends(_deps)]
