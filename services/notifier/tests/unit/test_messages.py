import uuid
from datetime import UTC, datetime

from notifier.domain import messages
from notifier.domain.messages import Contact, Envelope
from notifier.domain.points import points_for
from notifier.domain.tickets import (
    TicketPayload,
    private_key_from_seed,
    public_key_from_text,
    public_key_text,
    sign_ticket,
    verify_ticket,
)
from notifier.smtp_sink import file_name

KEY = private_key_from_seed("bm90aWZpZXItdGVzdC1zZWVkLTMyLWJ5dGVzLWxvbmc=")
BOOKING = str(uuid.uuid4())
EVENT = str(uuid.uuid4())


def envelope(kind: str) -> Envelope:
    return Envelope(event_id=EVENT, kind=kind, booking_id=BOOKING, showtime_id=42,
                    occurred_at=datetime(2026, 11, 29, 20, 0, tzinfo=UTC),
                    contact=Contact(7, "ana@example.com", "Ana"), sender="Tickets <t@cinema.example>")


def test_ticket_email_names_the_booking_and_carries_a_verifiable_qr(eml):
    signed = sign_ticket(TicketPayload(BOOKING, 42, ("F5", "F6")), KEY)
    msg = eml.parse(messages.render_ticket(envelope(messages.TICKET), ["F5", "F6"], 2400, 24, signed))
    assert BOOKING in msg["Subject"]
    assert msg["To"] == "Ana <ana@example.com>"
    assert msg["Message-ID"] == f"<{EVENT}.ticket@notifier.ticketing>"
    body = msg.get_body(("plain",))
    assert body is not None and BOOKING in body.get_content() and "F5, F6" in body.get_content()
    [text] = eml.qr_texts(msg)
    assert verify_ticket(text, public_key_from_text(public_key_text(KEY))) == TicketPayload(
        BOOKING, 42, ("F5", "F6"))


def test_refund_and_failure_emails(eml):
    refund = eml.parse(messages.render_refund(envelope(messages.REFUND), 2400, "re_123"))
    assert BOOKING in refund["Subject"] and "24.00 EUR" in refund.get_body(("plain",)).get_content()
    failed = eml.parse(messages.render_booking_failed(envelope(messages.BOOKING_FAILED), "HOLD_EXPIRED"))
    assert "refunded" in failed["Subject"]
    assert "no longer available" in failed.get_body(("plain",)).get_content()
    assert refund["Message-ID"] != failed["Message-ID"]


def test_message_id_is_deterministic_and_a_safe_file_name():
    assert messages.message_id(EVENT, "ticket") == messages.message_id(EVENT, "ticket")
    assert file_name(messages.message_id(EVENT, "ticket")) == f"{EVENT}.ticket@notifier.ticketing.eml"
    assert file_name("<../../etc/passwd>") == ".._.._etc_passwd.eml"


def test_points_round_down():
    assert points_for(2499) == 24 and points_for(0) == 0 and points_for(-5) == 0
