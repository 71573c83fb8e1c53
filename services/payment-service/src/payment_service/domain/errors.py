"""What can go wrong in payment-service's commands (mapped to HTTP in one table)."""

from __future__ import annotations


class PaymentError(Exception):
    pass


class HoldNotFound(PaymentError):
    """Unknown hold, or another customer's (no existence oracle)."""


class HoldNotActive(PaymentError):
    pass


class ShowtimeClosed(HoldNotActive):
    """hold-service says the hold's showtime sells nothing now (its sales closed, or it was cancelled): the
    checkout ends as for a hold that is no longer active, and answers SHOWTIME_CLOSED."""


class CheckoutLimit(PaymentError):
    """The hold had MAX_CHECKOUTS_PER_HOLD payment attempts already."""


class PaymentNotFound(PaymentError):
    pass


class IdempotencyKeyReused(PaymentError):
    pass


class VoucherRejected(PaymentError):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class DependencyUnavailable(ConnectionError):
    """hold-service, voucher-service or the gateway did not answer; an OSError, so the API maps it to
    503 and the consumer retries it as transient."""


class GatewayRejected(PaymentError):
    """The gateway refused an operation (an unknown session, a refund of an unpaid session)."""
