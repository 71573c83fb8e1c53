"""A bare FastAPI endpoint of the same shape as POST /showtimes/{id}/holds: the framework's ceiling.

Same framework settings as the services (ticketing.api.app.build_app): no OpenTelemetry.
"""

from __future__ import annotations

import uuid

from fastapi import FastAPI
from pydantic import BaseModel
from ticketing.api.app import NO_OTEL


class Body(BaseModel):
    seats: list[str]


def get_application() -> FastAPI:
    app = FastAPI(telemetry=NO_OTEL)

    @app.post("/showtimes/{showtime_id}/holds", status_code=201)
    async def hold(showtime_id: int, body: Body) -> dict[str, object]:
        return {"holdId": str(uuid.uuid4()), "showtimeId": showtime_id, "seats": body.seats}

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
