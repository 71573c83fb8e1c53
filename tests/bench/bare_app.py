"""Bare FastAPI endpoints of the same shapes as POST /showtimes/{id}/holds (bench-holds) and the waiting
room's join and poll (bench-queue) and the door's check-in (bench-checkins) and a sold-out
voucher's reservation (bench-vouchers): the framework's ceiling.

Same framework settings as the services (ticketing.api.app.build_app): no OpenTelemetry.
"""

from __future__ import annotations

import uuid

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from ticketing.api.app import NO_OTEL


class Body(BaseModel):
    seats: list[str]


class VoucherOrder(BaseModel):
    customerId: int
    orderId: str
    orderAmount: int


class Scan(BaseModel):
    ticket: str
    showtimeId: int
    door: str


def get_application() -> FastAPI:
    app = FastAPI(telemetry=NO_OTEL)

    @app.post("/showtimes/{showtime_id}/holds", status_code=201)
    async def hold(showtime_id: int, body: Body) -> dict[str, object]:
        return {"holdId": str(uuid.uuid4()), "showtimeId": showtime_id, "seats": body.seats}

    # The waiting room's two customer endpoints (bench-queue), same shapes.
    @app.post("/showtimes/{showtime_id}/queue", status_code=202)
    async def join(showtime_id: int) -> dict[str, object]:
        return {"ticket": uuid.uuid4().hex, "position": 1, "soldOut": False, "opensAt": None}

    @app.get("/queue/{ticket}")
    async def poll(ticket: str) -> dict[str, object]:
        return {"admitted": False, "position": 1, "estimatedWaitSeconds": 10, "admissionToken": None,
                "expiresAt": None, "soldOut": False, "opensAt": None}

    # The door's check-in (bench-checkins), same shapes: a body in, the admitted booking out.
    @app.post("/checkins")
    async def check_in(body: Scan) -> dict[str, object]:
        return {"admitted": True, "bookingId": str(uuid.uuid4()), "seats": ["F1", "F2"],
                "tickets": [{"seat": "F1", "category": "STANDARD", "ticketType": "ADULT", "priceCents": 1200}],
                "title": body.door, "startsAt": "2030-01-01T20:00:00Z"}

    # A voucher sold out (bench-vouchers' crowd after the limit), same shapes: a body in, the refusal out.
    @app.post("/vouchers/{code}/reservations")
    async def reserve(code: str, body: VoucherOrder) -> JSONResponse:
        return JSONResponse({"error": "OUT_OF_STOCK", "message": f"voucher {code} has no uses left"}, 409)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
