"""The retry decisions: permanent failures give up at once, transient ones back off until a bound."""

import pytest
from notifier.domain.delivery import Failure, GiveUp, RetryLater, RetryPolicy

POLICY = RetryPolicy(base_seconds=30, max_delay_seconds=1800, max_attempts=30, max_age_seconds=86400,
                     max_pause_seconds=60)


@pytest.mark.parametrize("failure", [Failure.REJECTED, Failure.SMTPUTF8_UNSUPPORTED])
def test_permanent_failures_give_up_on_the_first_attempt(failure):
    assert POLICY.verdict(failure, attempts=1, age_seconds=0) == GiveUp(failure.reason)


@pytest.mark.parametrize("failure", [Failure.DEFERRED, Failure.UNAVAILABLE])
def test_transient_failures_back_off_exponentially_up_to_the_cap(failure):
    delays = [POLICY.verdict(failure, attempts=n, age_seconds=0) for n in range(1, 10)]
    assert delays == [RetryLater(d) for d in (30, 60, 120, 240, 480, 960, 1800, 1800, 1800)]


def test_attempts_bound():
    assert POLICY.verdict(Failure.DEFERRED, attempts=29, age_seconds=0) == RetryLater(1800)
    assert POLICY.verdict(Failure.DEFERRED, attempts=30, age_seconds=0) == GiveUp("attempts_exhausted")


def test_age_bound():
    assert POLICY.verdict(Failure.UNAVAILABLE, attempts=2, age_seconds=86399) == RetryLater(60)
    assert POLICY.verdict(Failure.UNAVAILABLE, attempts=2, age_seconds=86400) == GiveUp("too_old")


def test_the_default_bounds_span_about_half_a_day_of_retries():
    """The figure config.py states: 30 attempts at 30 s doubling to 30 min are spread over ~12 h."""
    total = sum(RetryPolicy().backoff(n) for n in range(1, RetryPolicy().max_attempts))
    assert 11 * 3600 < total < 13 * 3600


def test_server_pause_doubles_from_the_sender_interval_up_to_its_cap():
    assert [POLICY.pause(1.0, n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]


def test_only_unavailable_stops_a_pass():
    assert [f for f in Failure if f.server_down] == [Failure.UNAVAILABLE]
