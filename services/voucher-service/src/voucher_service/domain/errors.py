"""What can go wrong with a voucher operation, in the domain's words (mapped to HTTP in one table)."""

from __future__ import annotations


class VoucherError(Exception):
    """Base of every expected, client-facing failure."""


class VoucherNotFound(VoucherError):
    pass


class VoucherExists(VoucherError):
    pass


class ReservationNotFound(VoucherError):
    pass


class OutOfStock(VoucherError):
    pass


class AlreadyUsed(VoucherError):
    """The customer's quota is used, or this order id already had (and released) a reservation."""


class ReservationReleased(AlreadyUsed):
    """A confirm of a released use: it is never resurrected (its use may have gone to someone else)."""


class ReservationConfirmed(AlreadyUsed):
    """A release of a confirmed use: the payment took the discount; nothing changes."""


class NotEligible(VoucherError):
    pass


class QuotesLimited(VoucherError):
    """The customer asked for more quotes than VOUCHER_QUOTE_RATE_LIMIT_PER_MINUTE."""

    def __init__(self, retry_after: int) -> None:
        super().__init__("too many quotes, slow down")
        self.retry_after = retry_after


class GateUnavailable(VoucherError):
    """Flash mode only: Redis or Kafka cannot take the reservation now (the client may retry)."""

    retry_after = 1


class SendRefused(GateUnavailable):
    """The VoucherReserved surely never left: the producer is not connected, or refused it before queueing."""


class GateRecovering(GateUnavailable):
    """Redis lost the voucher's gate; it reopens once Postgres holds every use the old gate admitted."""

    retry_after = 2


class RedemptionConflict(VoucherError):
    """A concurrent insert won a unique index (same order id or same slot); retry after rollback."""


class PaymentsUnavailable(Exception):
    """payment-service cannot tell a payment's status now (down, slow, an unexpected answer)."""
