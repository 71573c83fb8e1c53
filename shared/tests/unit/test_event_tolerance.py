"""Consumers read tolerantly what producers write strictly: a field a newer producer adds within version 1 (an
unknown one, or `currency` on a money event) never breaks a consumer, and a money event without `currency` (an
older producer's) is read as before; building an event with a field outside the catalogue is still refused."""

from __future__ import annotations

import json
import uuid

import pytest
from pydantic import ValidationError
from ticketing.events import booking_event, decode_booking_event, decode_voucher_reserved
from ticketing.events.vouchers import VoucherReserved

HELD = {"holdId": str(uuid.uuid4()), "seats": ["A1"], "expiresAt": "2031-01-01T00:00:00Z", "amountCents": 1200,
        "seatMapVersion": 3}


def seats_held(**data: object) -> dict:
    event = booking_event("SeatsHeld", source="hold-service", booking_id=uuid.uuid4(), showtime_id=4,
                          customer_id=7, data={**HELD, **data})
    return json.loads(event.model_dump_json())


def test_a_money_event_with_or_without_currency_is_read() -> None:
    assert decode_booking_event(json.dumps(seats_held()).encode()).data.currency is None  # type: ignore[union-attr]
    assert "currency" not in seats_held()["data"]  # an optional field is left out, not sent as null
    read = decode_booking_event(json.dumps(seats_held(currency="EUR")).encode())
    assert read.data.currency == "EUR"  # type: ignore[union-attr]


def test_fields_a_newer_producer_adds_are_ignored_by_a_consumer() -> None:
    message = seats_held(currency="USD")
    message["data"]["loyaltyTier"] = "GOLD"
    message["partner"] = {"id": 3}
    event = decode_booking_event(json.dumps(message).encode())
    assert event.type == "SeatsHeld" and event.data.amountCents == 1200  # type: ignore[union-attr]
    voucher = json.loads(VoucherReserved.new(code="X", customer_id=1, order_id="o", order_amount=5).model_dump_json())
    assert decode_voucher_reserved(json.dumps({**voucher, "currency": "EUR"}).encode()).code == "X"


def test_producers_stay_strict() -> None:
    with pytest.raises(ValidationError):
        seats_held(loyaltyTier="GOLD")
    with pytest.raises(ValidationError):
        seats_held(currency="eur")
