import uuid

import pytest
from pydantic import ValidationError
from ticketing.events import (
    BOOKING_EVENT_TYPES,
    BOOKING_EVENTS,
    VOUCHER_RESERVED,
    VoucherReserved,
    booking_event,
    decode_booking_event,
    decode_voucher_reserved,
    outgoing,
)

SAMPLE_DATA = {
    "SeatsHeld": {"holdId": uuid.uuid4(), "seats": ["A1"], "expiresAt": "2026-01-01T00:10:00Z",
                  "amountCents": 1200, "seatMapVersion": 3},
    "SeatsReleased": {"holdId": uuid.uuid4(), "seats": ["A1"], "reason": "EXPIRED", "seatMapVersion": 4},
    "CheckoutStarted": {"paymentId": uuid.uuid4(), "amountCents": 1200, "discountCents": 100,
                        "voucherCode": None, "expiresAt": "2026-01-01T00:08:00Z"},
    "PaymentSucceeded": {"paymentId": uuid.uuid4(), "amountCents": 1200},
    "PaymentFailed": {"paymentId": uuid.uuid4(), "reason": "DECLINED"},
    "BookingConfirmed": {"holdId": uuid.uuid4(), "seats": ["A1"], "amountCents": 1200, "discountCents": 0,
                         "paymentId": uuid.uuid4(), "seatMapVersion": 5},
    "BookingFailed": {"paymentId": uuid.uuid4(), "reason": "HOLD_EXPIRED"},
    "RefundIssued": {"paymentId": uuid.uuid4(), "amountCents": 1200, "refundId": "re_1"},
    "HoldExtended": {"holdId": uuid.uuid4(), "expiresAt": "2026-01-01T00:12:00Z"},
}


@pytest.mark.parametrize("event_type", sorted(BOOKING_EVENT_TYPES))
def test_every_booking_event_round_trips_with_key_and_headers(event_type):
    booking_id = uuid.uuid4()
    event = booking_event(event_type, source="test", booking_id=booking_id, showtime_id=42,
                          customer_id=7, data=SAMPLE_DATA[event_type])
    message = outgoing(event)
    assert message.topic == BOOKING_EVENTS
    assert message.key == str(booking_id)
    headers = dict(message.headers)
    assert headers["id"] == headers["ce_id"] == str(event.eventId).encode()
    assert headers["ce_type"] == event_type.encode()
    assert headers["ce_specversion"] == b"1.0"
    assert headers["content-type"] == b"application/json"
    decoded = decode_booking_event(message.value)
    assert decoded == event
    assert decoded.version == 1


def test_contract_breaches_are_refused():
    with pytest.raises(ValidationError):
        booking_event("SeatsReleased", source="t", booking_id=uuid.uuid4(), showtime_id=1, customer_id=1,
                      data={"holdId": uuid.uuid4(), "seats": [], "reason": "BORED", "seatMapVersion": 1})
    with pytest.raises(ValidationError):
        decode_booking_event(b'{"type": "SeatsHeld"}')
    with pytest.raises(ValidationError):
        decode_booking_event(b"not json")


def test_voucher_reserved_is_keyed_by_code():
    event = VoucherReserved.new(code="FLASH100", customer_id=7, order_id="o-1", order_amount=5000)
    message = outgoing(event)
    assert (message.topic, message.key) == (VOUCHER_RESERVED, "FLASH100")
    assert decode_voucher_reserved(message.value) == event
