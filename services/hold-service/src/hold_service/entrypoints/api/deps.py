"""FastAPI dependencies: the wired ports live on app.state (set by the lifespan)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from hold_service.service_layer.ports import Ports


async def get_ports(request: Request) -> Ports:
    ports: Ports = request.app.state.ports
    return ports


PortsDep = Annotated[Ports, Depends(get_ports)]
