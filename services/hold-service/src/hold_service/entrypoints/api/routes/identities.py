"""Customers of the identity provider (docs/sign-in.md): the other services ask here for the customer id of a
provider's subject (hold-service keeps the mapping), and the notifier reads the buyer's contact of a booking
when it sends the ticket (the address never travels on booking-events)."""

from __future__ import annotations

import hmac
import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Request
from pydantic import BaseModel, Field
from ticketing.api.errors import ApiError
from ticketing.api.security import require_role
from ticketing.auth import Principal
from ticketing.identity import ProviderContact

from hold_service.adapters.identities import PgCustomerIds

router = APIRouter(tags=["identities"])
Service = Annotated[Principal, Depends(require_role("service"))]


class SubjectIn(BaseModel):
    issuer: str = Field(min_length=1, max_length=500)
    subject: str = Field(min_length=1, max_length=255)
    email: str | None = Field(default=None, max_length=320)
    emailVerified: bool = False
    name: str | None = Field(default=None, max_length=200)
    locale: str | None = Field(default=None, max_length=35)


class CustomerIdOut(BaseModel):
    customerId: int


class BuyerContactOut(BaseModel):
    bookingId: uuid.UUID
    customerId: int
    email: str | None
    emailVerified: bool
    name: str | None
    locale: str | None


def _identities(request: Request) -> PgCustomerIds:
    return request.app.state.identities  # type: ignore[no-any-return]


@router.post("/customer-ids", response_model=CustomerIdOut, name="customer_id", responses={422: {}})
async def customer_id(body: SubjectIn, _caller: Service, request: Request) -> CustomerIdOut:
    """Another service of ours: our customer id of a provider's subject (made now at its first sign-in), with its
    contact as the token states it."""
    contact = ProviderContact(email=body.email, email_verified=body.emailVerified, name=body.name,
                              locale=body.locale)
    return CustomerIdOut(customerId=await _identities(request).resolve(body.issuer, body.subject, contact))


@router.get("/buyer-contacts/{booking_id}", response_model=BuyerContactOut, name="buyer_contact",
            responses={401: {}, 404: {}})
async def buyer_contact(booking_id: uuid.UUID, request: Request,
                        x_api_key: Annotated[str, Header()] = "") -> BuyerContactOut:
    """The notifier (X-Api-Key: CONTACTS_API_KEY): the e-mail, name and language of the booking's buyer, as his
    provider's token last stated them; 404 when hold-service has none (or CONTACTS_API_KEY is not set)."""
    key = request.app.state.deps.settings.contacts_api_key
    if not key:
        raise ApiError(404, "NOT_FOUND", "buyer contacts are not served here (CONTACTS_API_KEY is not set)")
    if not hmac.compare_digest(x_api_key.encode(), key.encode()):
        raise ApiError(401, "UNAUTHORIZED", "a valid X-Api-Key is required")
    found = await _identities(request).contact(booking_id)
    if found is None:
        raise ApiError(404, "NOT_FOUND", "no contact is known for this booking")
    return BuyerContactOut(bookingId=booking_id, customerId=found.customer_id, email=found.email,
                           emailVerified=found.email_verified, name=found.name, locale=found.locale)
