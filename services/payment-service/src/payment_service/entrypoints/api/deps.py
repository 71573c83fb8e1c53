"""FastAPI dependencies: the container built by the lifespan."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from payment_service.bootstrap import Container


def _container(request: Request) -> Container:
    return request.app.state.container  # type: ignore[no-any-return]


ContainerDep = Annotated[Container, Depends(_container)]
