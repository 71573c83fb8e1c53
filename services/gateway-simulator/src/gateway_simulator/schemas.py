"""Request and response bodies of the simulator (docs/api/gateway-simulator.openapi.json)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field


class SessionCreate(BaseModel):
    amountCents: int = Field(ge=0)
    reference: str = Field(min_length=1, max_length=200)
    callbackUrl: str
    expiresAt: datetime


class SessionCreated(BaseModel):
    sessionId: str
    url: str
    status: str
    expiresAt: datetime


class SessionPublic(BaseModel):
    sessionId: str
    status: Literal["open", "paid", "failed", "expired"]
    reference: str
    amountCents: int
    expiresAt: datetime
    refundIds: list[str]
    paidAt: datetime | None = None  # when the customer paid (or was declined); None while open or expired


class RefundCreate(BaseModel):
    amountCents: int | None = None


class RefundCreated(BaseModel):
    refundId: str


class RefuseRefunds(BaseModel):
    count: int = Field(ge=0, le=1_000_000, description="How many of the next refund requests are refused.")


class PayCommand(BaseModel):
    outcome: Literal["succeeded", "failed"]
    delivery: Literal["normal", "duplicate", "delayed", "never"] = "normal"
    delaySeconds: float = Field(default=0, ge=0, le=3600)


class PayResult(BaseModel):
    sessionId: str
    status: str
    eventId: str
