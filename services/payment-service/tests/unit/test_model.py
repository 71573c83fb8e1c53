import uuid
from dataclasses import replace
from datetime import UTC, datetime

from payment_service.domain.model import Payment, charged_amount, outcome_of, refund_backoff

PAYMENT = Payment(payment_id=uuid.uuid4(), hold_id=uuid.uuid4(), booking_id=uuid.uuid4(), customer_id=7,
                  showtime_id=1, amount_cents=700, discount_cents=500, voucher_code="TEN", status="PENDING",
                  expires_at=datetime(2030, 1, 1, tzinfo=UTC))


def test_gateway_states_decide_the_payment() -> None:
    assert outcome_of("open") is None
    assert outcome_of("paid").status == "SUCCEEDED"  # type: ignore[union-attr]
    assert (outcome_of("failed").status, outcome_of("failed").reason) == ("FAILED", "DECLINED")  # type: ignore[union-attr]
    assert (outcome_of("expired").status, outcome_of("expired").reason) == ("EXPIRED", "EXPIRED")  # type: ignore[union-attr]


def test_a_discount_never_makes_the_price_negative() -> None:
    assert charged_amount(1200, 300) == (900, 300)
    assert charged_amount(1200, 5000) == (0, 1200)


def test_refunds_back_off_exponentially_up_to_a_cap() -> None:
    assert [refund_backoff(n, 2, 60) for n in (1, 2, 3, 4, 5, 6, 10)] == [2, 4, 8, 16, 32, 60, 60]


def test_a_voucher_use_comes_back_only_from_attempts_that_will_never_be_booked() -> None:
    assert [replace(PAYMENT, status=s).voucher_use_ended for s in ("PENDING", "SUCCEEDED")] == [False, False]
    assert all(replace(PAYMENT, status=s).voucher_use_ended for s in ("FAILED", "EXPIRED", "REFUNDED"))
    assert not replace(PAYMENT, status="FAILED", voucher_code=None).voucher_use_ended
