"""The one table from domain errors to the contract's HTTP errors."""

from __future__ import annotations

from ticketing.api.errors import ApiError

from voucher_service.domain import errors

TABLE: dict[type[errors.VoucherError], tuple[int, str]] = {
    errors.VoucherNotFound: (404, "NOT_FOUND"),
    errors.ReservationNotFound: (404, "NOT_FOUND"),
    errors.VoucherExists: (422, "VALIDATION_ERROR"),
    errors.OutOfStock: (409, "OUT_OF_STOCK"),
    errors.AlreadyUsed: (409, "ALREADY_USED"),
    errors.NotEligible: (422, "NOT_ELIGIBLE"),
    errors.QuotesLimited: (429, "RATE_LIMITED"),
    errors.GateUnavailable: (503, "UNAVAILABLE"),
    errors.GateRecovering: (503, "UNAVAILABLE"),
    errors.RedemptionConflict: (503, "UNAVAILABLE"),
}


def to_api_error(exc: errors.VoucherError) -> ApiError:
    found = next((TABLE[cls] for cls in type(exc).__mro__ if cls in TABLE), (500, "INTERNAL"))
    status, code = found
    retry_after = getattr(exc, "retry_after", 1)
    headers = {"Retry-After": str(retry_after)} if status in (429, 503) else None
    return ApiError(status, code, str(exc), headers=headers)
