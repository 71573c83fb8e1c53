"""Bodies of the simulator's test controls (its Stripe API answers Stripe's own shapes)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class RefuseRefunds(BaseModel):
    count: int = Field(ge=0, le=1_000_000, description="How many of the next refund requests are refused.")


class PayCommand(BaseModel):
    outcome: Literal["succeeded", "failed", "processing"]
    delivery: Literal["normal", "duplicate", "delayed", "never"] = "normal"
    delaySeconds: float = Field(default=0, ge=0, le=3600)


class PayResult(BaseModel):
    sessionId: str
    status: str
    eventId: str
