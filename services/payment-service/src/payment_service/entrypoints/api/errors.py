"""The one table from domain errors to the contract's HTTP errors."""

from __future__ import annotations

from collections.abc import Callable

from ticketing.api.errors import ApiError, not_found, unavailable

from payment_service.domain import errors

_TABLE: dict[type[Exception], Callable[[Exception], ApiError]] = {
    errors.HoldNotFound: lambda _: not_found("hold"),
    errors.PaymentNotFound: lambda _: not_found("payment"),
    errors.ShowtimeClosed: lambda e: ApiError(409, "SHOWTIME_CLOSED", str(e) or "sales of the showtime are closed"),
    errors.HoldNotActive: lambda e: ApiError(409, "HOLD_NOT_ACTIVE", str(e) or "the hold is not active"),
    errors.CheckoutLimit: lambda e: ApiError(409, "CHECKOUT_LIMIT", str(e)),
    errors.IdempotencyKeyReused: lambda _: ApiError(
        422, "IDEMPOTENCY_KEY_REUSED", "this Idempotency-Key was used with another request body"),
    errors.VoucherRejected: lambda e: ApiError(e.status, e.code, e.message),  # type: ignore[attr-defined]
    errors.DependencyUnavailable: lambda e: unavailable(str(e).split(":")[0] or "a dependency"),
    errors.GatewayRejected: lambda _: unavailable("the payment gateway"),
}


def to_api_error(exc: Exception) -> ApiError:
    for kind, build in _TABLE.items():
        if isinstance(exc, kind):
            return build(exc)
    raise exc
