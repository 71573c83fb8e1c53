import importlib
import inspect
import pkgutil
import uuid

import orjson
import pytest
from pydantic import ValidationError
from ticketing import events
from ticketing.envelope import Envelope
from ticketing.events import (
    BOOKING_EVENT_TYPES,
    BOOKING_EVENTS,
    VOUCHER_RESERVED,
    BookingConfirmed,
    VoucherReserved,
    booking_event,
    decode_booking_event,
    decode_voucher_reserved,
    outgoing,
    showtime_event,
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
    "BookingCancelled": {"holdId": uuid.uuid4(), "seats": ["A1"], "reason": "SHOWTIME_CANCELLED",
                         "paymentId": uuid.uuid4(), "seatMapVersion": 6},
    "TicketCheckedIn": {"door": "A", "at": "2026-01-01T19:05:00Z"},
}
SHOWTIME_EVENTS = {"ShowtimeCancelled": {"reason": "projector failure"},
                   "WaitingRoomOpened": {"reason": "ARRIVALS", "activeLimit": 200},
                   "WaitingRoomClosed": {"reason": "RUSH_OVER", "activeLimit": 200}}


def test_the_samples_cover_the_catalogue():
    assert set(SAMPLE_DATA) | set(SHOWTIME_EVENTS) == set(BOOKING_EVENT_TYPES)


def test_every_event_type_of_the_catalogue_s_modules_is_in_its_one_registry():
    """The payloads live in a module per subject; an event type defined there and left out of
    BOOKING_EVENT_TYPES would be neither decoded nor published in docs/events."""
    modules = [importlib.import_module(f"{events.__name__}.{info.name}")
               for info in pkgutil.iter_modules(events.__path__)]
    defined = {cls for module in modules for _, cls in inspect.getmembers(module, inspect.isclass)
               if issubclass(cls, Envelope) and cls.__module__ == module.__name__}
    assert len(defined) > 10
    assert defined == set(BOOKING_EVENT_TYPES.values())


@pytest.mark.parametrize("event_type", sorted(SAMPLE_DATA))
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


def test_a_showtime_event_is_keyed_by_its_showtime_and_names_no_booking():
    event = showtime_event("ShowtimeCancelled", source="hold-service", showtime_id=42, data=SHOWTIME_EVENTS[
        "ShowtimeCancelled"])
    message = outgoing(event)
    assert (message.topic, message.key) == (BOOKING_EVENTS, "showtime:42")
    assert decode_booking_event(message.value) == event
    assert "bookingId" not in orjson.loads(message.value)
    with pytest.raises(ValueError, match="showtime_event"):
        booking_event("ShowtimeCancelled", source="t", booking_id=uuid.uuid4(), showtime_id=1, customer_id=1,
                      data=SHOWTIME_EVENTS["ShowtimeCancelled"])
    with pytest.raises(ValueError, match="booking_event"):
        showtime_event("BookingCancelled", source="t", showtime_id=1, data=SAMPLE_DATA["BookingCancelled"])


def test_seats_released_by_a_cancelled_showtime_and_a_cancellation_s_reasons():
    for reason in ("CANCELLED", "EXPIRED", "SHOWTIME_CANCELLED"):
        booking_event("SeatsReleased", source="t", booking_id=uuid.uuid4(), showtime_id=1, customer_id=1,
                      data={**SAMPLE_DATA["SeatsReleased"], "reason": reason})
    with pytest.raises(ValidationError):
        booking_event("BookingCancelled", source="t", booking_id=uuid.uuid4(), showtime_id=1, customer_id=1,
                      data={**SAMPLE_DATA["BookingCancelled"], "reason": "EXPIRED"})


def test_booking_confirmed_s_ticket_details_are_optional_and_absent_when_unknown():
    """A version-1 payload only gains optional fields: an older producer's message (no details) still
    decodes, and a message without them carries no nulls for them."""
    bare = booking_event("BookingConfirmed", source="t", booking_id=uuid.uuid4(), showtime_id=1, customer_id=1,
                         data=SAMPLE_DATA["BookingConfirmed"])
    assert set(orjson.loads(outgoing(bare).value)["data"]) == {"holdId", "seats", "amountCents", "discountCents",
                                                      "paymentId", "seatMapVersion"}
    detailed = booking_event("BookingConfirmed", source="t", booking_id=uuid.uuid4(), showtime_id=1,
                             customer_id=1, data={**SAMPLE_DATA["BookingConfirmed"], "title": "Dune",
                                                  "cinema": "Colombo", "hall": "Sala 3",
                                                  "startsAt": "2027-03-01T19:30:00Z", "timeZone": "Europe/Lisbon",
                                                  "tickets": [{"seat": "A1", "category": "VIP",
                                                               "ticketType": "CHILD", "priceCents": 1200}]})
    decoded = decode_booking_event(outgoing(detailed).value)
    assert isinstance(decoded, BookingConfirmed) and decoded == detailed
    assert decoded.data.tickets is not None and decoded.data.tickets[0].ticketType == "CHILD"
    required = BookingConfirmed.model_json_schema(mode="serialization")["$defs"]["BookingConfirmedData"]["required"]
    assert not {"title", "cinema", "hall", "startsAt", "timeZone", "tickets"} & set(required)
