"""Bodies of the simulator's test controls (its Stripe API answers Stripe's own shapes)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class StripeErrorDetail(BaseModel):
    type: str = Field(description="invalid_request_error | api_error | card_error")
    code: str | None = Field(default=None, description="resource_missing, charge_already_refunded, ...")
    message: str


class StripeErrorBody(BaseModel):
    """Stripe's error shape, as its API (`/v1`) answers errors."""

    error: StripeErrorDetail


STRIPE_ERRORS: dict[int | str, dict[str, object]] = {
    status: {"model": StripeErrorBody, "description": text}
    for status, text in ((400, "Stripe refuses the parameters or the state (the body says which)."),
                         (401, "No valid secret key (Authorization: Bearer <STRIPE_API_KEY>)."),
                         (402, "The refund was refused (the test control that refuses refunds)."),
                         (404, "No such object."))}


class RefuseRefunds(BaseModel):
    count: int = Field(ge=0, le=1_000_000, description="How many of the next refund requests are refused.")


class PayCommand(BaseModel):
    outcome: Literal["succeeded", "failed", "processing"]
    delivery: Literal["normal", "duplicate", "delayed", "never", "out_of_order"] = "normal"
    delaySeconds: float = Field(default=0, ge=0, le=3600)


class PayResult(BaseModel):
    sessionId: str
    status: str
    eventId: str
