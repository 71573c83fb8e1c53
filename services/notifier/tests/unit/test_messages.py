import uuid
from datetime import UTC, datetime

import pytest
from notifier.domain import messages
from notifier.domain.delivery import DeliveryError, Failure
from notifier.domain.messages import Contact, Envelope
from notifier.domain.points import points_for
from notifier.domain.showing import Showing
from smtp_sink.server import file_name
from ticketing.tickets import (
    TicketPayload,
    private_key_from_seed,
    public_key_from_text,
    public_key_text,
    sign_ticket,
    verify_ticket,
)

KEY = private_key_from_seed("bm90aWZpZXItdGVzdC1zZWVkLTMyLWJ5dGVzLWxvbmc=")
BOOKING = str(uuid.uuid4())
EVENT = str(uuid.uuid4())


def envelope(kind: str) -> Envelope:
    return Envelope(event_id=EVENT, kind=kind, booking_id=BOOKING, showtime_id=42,
                    occurred_at=datetime(2026, 11, 29, 20, 0, tzinfo=UTC),
                    contact=Contact(7, "ana@example.com", "Ana"), sender="Tickets <t@cinema.example>")


def test_ticket_email_names_the_booking_and_carries_a_verifiable_qr(eml):
    signed = sign_ticket(TicketPayload(BOOKING, 42, ("F5", "F6")), KEY)
    msg = eml.parse(messages.render_ticket(envelope(messages.TICKET), Showing(42, ("F5", "F6")), 2400, 0, 24,
                                           signed).message)
    assert BOOKING in msg["Subject"]
    assert msg["To"] == "Ana <ana@example.com>"
    assert msg["Message-ID"] == f"<{EVENT}.ticket@notifier.ticketing>"
    body = msg.get_body(("plain",))
    assert body is not None and BOOKING in body.get_content() and "F5, F6" in body.get_content()
    [text] = eml.qr_texts(msg)
    assert verify_ticket(text, public_key_from_text(public_key_text(KEY))) == TicketPayload(
        BOOKING, 42, ("F5", "F6"))


def test_refund_and_failure_emails(eml):
    refund = eml.parse(messages.render_refund(envelope(messages.REFUND), 2400, "re_123").message)
    assert BOOKING in refund["Subject"] and "€24.00" in refund.get_body(("plain",)).get_content()
    failed = eml.parse(messages.render_booking_failed(envelope(messages.BOOKING_FAILED), "HOLD_EXPIRED").message)
    assert "refunded" in failed["Subject"]
    assert "no longer available" in failed.get_body(("plain",)).get_content()
    assert refund["Message-ID"] != failed["Message-ID"]


def test_message_id_is_deterministic_and_a_safe_file_name():
    assert messages.message_id(EVENT, "ticket") == messages.message_id(EVENT, "ticket")
    assert file_name(messages.message_id(EVENT, "ticket")) == f"{EVENT}.ticket@notifier.ticketing.eml"
    assert file_name("<../../etc/passwd>") == ".._.._etc_passwd.eml"


def test_points_round_down():
    assert points_for(2499) == 24 and points_for(0) == 0 and points_for(-5) == 0


def contact_envelope(email: str, name: str = "José") -> Envelope:
    return Envelope(event_id=EVENT, kind=messages.REFUND, booking_id=BOOKING, showtime_id=42,
                    occurred_at=datetime(2026, 11, 29, 20, 0, tzinfo=UTC), contact=Contact(7, email, name),
                    sender="Tickets <t@cinema.example>")


def test_ascii_address_gets_one_7bit_message_for_any_server():
    rendered = messages.render_refund(contact_envelope("ana@example.com"), 2400, "re_1")
    assert rendered.message.isascii() and rendered.ascii_message is None
    assert rendered.for_server(False) == rendered.for_server(True) == ("ana@example.com", rendered.message, False)
    assert b"=?utf-8?q?Jos=C3=A9?= <ana@example.com>" in rendered.message  # RFC 2047 for the name only


def test_idn_domain_is_utf8_for_smtputf8_servers_and_idna_for_the_others():
    rendered = messages.render_refund(contact_envelope("ana@exämple.com"), 2400, "re_1")
    recipient, utf8, smtputf8 = rendered.for_server(True)
    assert (recipient, smtputf8) == ("ana@exämple.com", True)
    assert "To: José <ana@exämple.com>".encode() in utf8
    recipient, ascii_form, smtputf8 = rendered.for_server(False)
    assert (recipient, smtputf8) == ("ana@xn--exmple-cua.com", False)
    assert ascii_form.isascii() and b"<ana@xn--exmple-cua.com>" in ascii_form


def test_non_ascii_local_part_needs_smtputf8():
    rendered = messages.render_refund(contact_envelope("josé@exämple.com"), 2400, "re_1")
    assert rendered.for_server(True) == ("josé@exämple.com", rendered.message, True)
    assert "<josé@exämple.com>".encode() in rendered.message
    with pytest.raises(DeliveryError) as refused:
        rendered.for_server(False)
    assert refused.value.failure is Failure.SMTPUTF8_UNSUPPORTED and refused.value.failure.permanent


@pytest.mark.parametrize(("email", "name"), [("not an address", "Ana"), ("ana@localhost", "Ana"),
                                             ("ana@example.com", "Ana\r\nBcc: x@example.com")])
def test_what_cannot_be_an_email_raises_a_value_error(email, name):
    with pytest.raises(ValueError):  # InvalidAddress, or the email package refusing a line break
        messages.render_refund(contact_envelope(email, name), 2400, "re_1")


def test_ticket_shows_the_paid_amount_and_the_discount_when_there_is_one(eml):
    signed = sign_ticket(TicketPayload(BOOKING, 42, ("F5",)), KEY)
    with_discount = messages.render_ticket(envelope(messages.TICKET), Showing(42, ("F5",)), 950, 250, 9, signed)
    body = eml.parse(with_discount.message).get_body(("plain",)).get_content()
    assert "Paid: €9.50" in body and "Voucher discount: €2.50" in body
    without = messages.render_ticket(envelope(messages.TICKET), Showing(42, ("F5",)), 1200, 0, 12, signed)
    assert "discount" not in eml.parse(without.message).get_body(("plain",)).get_content()
