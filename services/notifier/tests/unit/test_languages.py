"""E-mails in the customer's language (the directory's locale: English, Spanish, Vietnamese, else English),
times in the cinema's time zone, money in the customer's locale; the ticket e-mail names film, cinema, hall,
start and each seat's category and ticket type (BookingConfirmed's optional details, done without when an
older producer sends none); one cancellation e-mail per booking, worded for who cancelled, with its refund."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from notifier.adapters.catalogues import load_catalogues
from notifier.domain import messages
from notifier.domain.language import InvalidLocale, language_for, normalized_locale
from notifier.domain.messages import Contact
from notifier.domain.policy import NotifyPolicy
from notifier.service_layer.handlers import (
    notify_booking_cancelled,
    notify_booking_confirmed,
    notify_refund_issued,
)
from notifier_fakes import FakeUnitOfWork
from ticketing.events import booking_event
from ticketing.tickets import private_key_from_seed

POLICY = NotifyPolicy("Cinema Tickets <tickets@cinema.example>", private_key_from_seed(
    "bm90aWZpZXItdGVzdC1zZWVkLTMyLWJ5dGVzLWxvbmc="), catalogues=load_catalogues())
DETAILS = {"title": "Dune: Part Three", "cinema": "Madrid Kinépolis", "hall": "Sala 3",
           "startsAt": "2027-03-01T19:30:00Z", "timeZone": "Europe/Madrid",
           "tickets": [{"seat": "F7", "category": "ACCESSIBLE", "ticketType": "ADULT", "priceCents": 1200},
                       {"seat": "K1", "category": "VIP", "ticketType": "ADULT", "priceCents": 1800},
                       {"seat": "K2", "category": "VIP", "ticketType": "CHILD", "priceCents": 1300}]}


def confirmed(booking: uuid.UUID, details: dict | None = None, amount: int = 3800, discount: int = 500):  # type: ignore[no-untyped-def,type-arg]
    return booking_event("BookingConfirmed", source="hold-service", booking_id=booking, showtime_id=42,
                         customer_id=7, data={"holdId": uuid.uuid4(), "seats": ["F7", "K1", "K2"],
                                              "amountCents": amount, "discountCents": discount,
                                              "paymentId": uuid.uuid4(), "seatMapVersion": 3, **(details or {})})


def cancelled(booking: uuid.UUID, reason: str = "SHOWTIME_CANCELLED"):  # type: ignore[no-untyped-def]
    return booking_event("BookingCancelled", source="hold-service", booking_id=booking, showtime_id=42,
                         customer_id=7, data={"holdId": uuid.uuid4(), "seats": ["F7", "K1", "K2"], "reason": reason,
                                              "paymentId": uuid.uuid4(), "seatMapVersion": 4})


def refunded(booking: uuid.UUID, amount: int = 3800):  # type: ignore[no-untyped-def]
    return booking_event("RefundIssued", source="payment-service", booking_id=booking, showtime_id=42,
                         customer_id=7, data={"paymentId": uuid.uuid4(), "amountCents": amount, "refundId": "re_9"})


def directory(locale: str, name: str = "Ana") -> FakeUnitOfWork:
    return FakeUnitOfWork({7: Contact(7, "ana@example.com", name, locale)})


def text(eml, uow: FakeUnitOfWork, kind: str) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """(subject, plain text) of the one e-mail of that kind queued."""
    [row] = [r for r in uow.emails.rows if r.email is not None and r.email.kind == kind]
    assert row.rendered is not None
    msg = eml.parse(row.rendered.message)
    body = msg.get_body(("plain",)).get_content().replace("\r\n", "\n")
    return str(msg["Subject"]).strip(), body.replace("\xa0", " ")  # Babel puts a no-break space before the €


async def ticket(eml, locale: str, name: str, details: dict) -> tuple[uuid.UUID, str, str]:  # type: ignore[no-untyped-def,type-arg]
    """(booking, subject, text) of the ticket e-mail a customer of `locale` gets; printed for the record."""
    uow, booking = directory(locale, name), uuid.uuid4()
    await notify_booking_confirmed(confirmed(booking, details), uow, POLICY)
    subject, body = text(eml, uow, messages.TICKET)
    print(f"\n--- {locale} ticket ---\nSubject: {subject}\n{body}")
    assert len(eml.qr_texts(eml.parse(uow.emails.rows[0].rendered.message))) == 1  # one QR for the group
    return booking, subject, body


async def test_a_spanish_ticket_names_the_film_the_hall_the_local_start_and_each_seat(eml) -> None:
    booking, subject, body = await ticket(eml, "es", "Ana", DETAILS)
    assert subject == f"Tus entradas: Dune: Part Three - reserva {booking}"
    for line in ("Hola, Ana:", f"Tu reserva {booking} está confirmada.", "Película: Dune: Part Three",
                 "Cine: Madrid Kinépolis", "Sala: Sala 3",
                 "Comienza: lunes, 1 de marzo de 2027, 20:30 (hora estándar de Europa central)",  # 19:30 UTC
                 "  F7: Espacio para silla de ruedas, Adulto, 12,00 €", "  K1: VIP, Adulto, 18,00 €",
                 "  K2: VIP, Niño, 13,00 €", "Pagado: 38,00 €", "Descuento del cupón: 5,00 €",
                 "Puntos de fidelidad obtenidos: 38", "Muestra el código QR adjunto en la entrada"):
        assert line in body, line
    assert "Showtime" not in body and "Seats" not in body  # nothing left in English


async def test_a_vietnamese_ticket_in_the_cinema_s_time_zone(eml) -> None:
    saigon = {**DETAILS, "cinema": "CGV Vincom Đồng Khởi", "hall": "Phòng 5", "timeZone": "Asia/Ho_Chi_Minh",
              "startsAt": "2027-03-01T12:00:00Z"}
    booking, subject, body = await ticket(eml, "vi", "Minh", saigon)
    assert subject == f"Vé của bạn: Dune: Part Three - mã đặt vé {booking}"
    for line in ("Xin chào Minh,", f"Đặt vé {booking} của bạn đã được xác nhận.", "Phim: Dune: Part Three",
                 "Rạp: CGV Vincom Đồng Khởi", "Phòng chiếu: Phòng 5",
                 "Bắt đầu: 19:00 Thứ Hai, 1 tháng 3, 2027 (GMT+07:00)",  # 12:00 UTC is 19:00 in Saigon
                 "  K2: VIP, Trẻ em, 13,00 €", "  F7: Chỗ dành cho xe lăn, Người lớn, 12,00 €",
                 "Đã thanh toán: 38,00 €", "Giảm giá từ voucher: 5,00 €", "Điểm thưởng nhận được: 38"):
        assert line in body, line


async def test_an_older_producer_s_ticket_names_the_showtime_by_its_number(eml) -> None:
    uow, booking = directory("es"), uuid.uuid4()
    await notify_booking_confirmed(confirmed(booking), uow, POLICY)
    subject, body = text(eml, uow, messages.TICKET)
    assert subject == f"Tus entradas - reserva {booking}"
    assert "Función: 42" in body and "Asientos: F7, K1, K2" in body and "Película" not in body


@pytest.mark.parametrize(("locale", "language", "paid"), [
    ("es", "es", "38,00 €"), ("es-MX", "es", "EUR38.00"), ("vi_VN", "vi", "38,00 €"), ("en", "en", "€38.00"),
    ("fr", "en", "€38.00"), ("", "en", "€38.00"), ("not a locale", "en", "€38.00")])
def test_a_locale_without_a_catalogue_falls_back_to_english(locale: str, language: str, paid: str) -> None:
    lang = language_for(locale, POLICY.catalogues)
    assert lang.code == language
    assert lang.money(3800, "EUR").replace("\xa0", " ") == paid


def test_times_are_in_the_cinema_s_time_zone_and_utc_without_one() -> None:
    at = datetime(2027, 7, 1, 18, 0, tzinfo=UTC)
    english = language_for("en", {})
    assert english.moment(at, "Europe/Lisbon").startswith("Thursday, July 1, 2027, 7:00\u202fPM")  # summer: +1
    assert english.moment(at, "America/Mexico_City").startswith("Thursday, July 1, 2027, 12:00\u202fPM")
    assert english.moment(at, None).startswith("Thursday, July 1, 2027, 6:00\u202fPM")
    assert english.moment(at, "Not/AZone").startswith("Thursday, July 1, 2027, 6:00\u202fPM")


def test_the_directory_takes_a_locale_tag_and_refuses_what_is_not_one() -> None:
    assert (normalized_locale("es"), normalized_locale("vi-VN"), normalized_locale("es-mx")) == ("es", "vi_VN", "es_MX")
    with pytest.raises(InvalidLocale):
        normalized_locale("klingon!")


@pytest.mark.parametrize("locale", ["es", "vi"])
async def test_a_showtime_cancellation_and_a_customer_s_read_differently(eml, locale: str) -> None:
    uows = {}
    for reason in ("SHOWTIME_CANCELLED", "CUSTOMER"):
        uow, booking = directory(locale), uuid.uuid4()
        await notify_booking_confirmed(confirmed(booking, DETAILS), uow, POLICY)
        await notify_booking_cancelled(cancelled(booking, reason), uow, POLICY)
        uows[reason] = text(eml, uow, messages.CANCELLATION)
        print(f"\n--- {locale} cancellation ({reason}) ---\nSubject: {uows[reason][0]}\n{uows[reason][1]}")
    (showtime_subject, showtime_body), (customer_subject, customer_body) = uows["SHOWTIME_CANCELLED"], uows["CUSTOMER"]
    assert showtime_subject.split(" - ")[0] != customer_subject.split(" - ")[0]
    first_line = {reason: body.split("\n")[2] for reason, (_, body) in uows.items()}
    assert first_line["SHOWTIME_CANCELLED"] != first_line["CUSTOMER"]
    refund = {"es": "Te reembolsamos 38,00 €, el importe íntegro que pagaste",
              "vi": "Chúng tôi hoàn lại 38,00 €, toàn bộ số tiền bạn đã thanh toán"}[locale]
    film = {"es": "Película: Dune: Part Three", "vi": "Phim: Dune: Part Three"}[locale]
    for body in (showtime_body, customer_body):
        assert refund in body and film in body


async def test_one_cancellation_e_mail_per_booking_and_no_second_one_for_its_refund(eml) -> None:
    uow, booking = directory("es"), uuid.uuid4()
    await notify_booking_confirmed(confirmed(booking, DETAILS), uow, POLICY)
    await notify_booking_cancelled(cancelled(booking, "CUSTOMER"), uow, POLICY)
    await notify_booking_cancelled(cancelled(booking), uow, POLICY)  # another event: the showtime's, later
    await notify_refund_issued(refunded(booking), uow, POLICY)  # the refund the e-mail already told of
    kinds = [r.email.kind for r in uow.emails.rows if r.email is not None]
    assert kinds == [messages.TICKET, messages.CANCELLATION]
    assert text(eml, uow, messages.CANCELLATION)[0].startswith("Reserva cancelada")  # the first one's wording


async def test_a_refund_that_came_first_gives_the_cancellation_its_amount(eml) -> None:
    """RefundIssued before BookingCancelled (a cancellation replayed late): the refund e-mail went, and the
    cancellation e-mail says the refund's amount."""
    uow, booking = directory("en"), uuid.uuid4()
    await notify_booking_confirmed(confirmed(booking, DETAILS, amount=3800), uow, POLICY)
    await notify_refund_issued(refunded(booking, amount=3700), uow, POLICY)
    await notify_booking_cancelled(cancelled(booking), uow, POLICY)
    _, body = text(eml, uow, messages.CANCELLATION)
    assert "We are refunding €37.00, the full amount you paid" in body
    assert [r.email.kind for r in uow.emails.rows if r.email] == ["ticket", "refund", "cancellation"]


async def test_a_cancellation_of_a_booking_never_seen_confirmed_still_tells_of_the_full_refund(eml) -> None:
    uow, booking = directory("vi"), uuid.uuid4()
    await notify_booking_cancelled(cancelled(booking), uow, POLICY)
    subject, body = text(eml, uow, messages.CANCELLATION)
    assert subject == f"Suất chiếu đã bị huỷ - mã đặt vé {booking}"
    assert "Suất chiếu: 42" in body and "Ghế: F7, K1, K2" in body
    assert "Chúng tôi hoàn lại toàn bộ số tiền bạn đã thanh toán" in body
