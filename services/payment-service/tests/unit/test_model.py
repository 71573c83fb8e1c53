from datetime import UTC, datetime, timedelta

from payment_service.domain.model import charged_amount, outcome_of, session_expiry

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def test_session_expires_ttl_after_creation_when_the_hold_lasts_longer() -> None:
    assert session_expiry(NOW, 480, NOW + timedelta(minutes=10)) == NOW + timedelta(seconds=480)


def test_session_never_outlives_the_hold() -> None:
    assert session_expiry(NOW, 480, NOW + timedelta(minutes=3)) == NOW + timedelta(minutes=3)


def test_gateway_states_decide_the_payment() -> None:
    assert outcome_of("open") is None
    assert outcome_of("paid").status == "SUCCEEDED"  # type: ignore[union-attr]
    assert (outcome_of("failed").status, outcome_of("failed").reason) == ("FAILED", "DECLINED")  # type: ignore[union-attr]
    assert (outcome_of("expired").status, outcome_of("expired").reason) == ("EXPIRED", "EXPIRED")  # type: ignore[union-attr]


def test_a_discount_never_makes_the_price_negative() -> None:
    assert charged_amount(1200, 300) == (900, 300)
    assert charged_amount(1200, 5000) == (0, 1200)
