"""FastAPI dependencies: the handlers' `Deps` live on app.state (set by the lifespan)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from hold_service.service_layer.ports import Deps


async def get_deps(request: Request) -> Deps:
    deps: Deps = request.app.state.deps
    return deps


DepsDep = Annotated[Deps, Depends(get_deps)]
