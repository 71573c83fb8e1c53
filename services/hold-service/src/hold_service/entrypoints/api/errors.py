"""The one table from domain refusals to the contract's error codes; `ApiError.response()` writes the body."""

from __future__ import annotations

from ticketing.api.errors import ApiError

from hold_service.domain.errors import (
    AdmissionRequired,
    CancellationClosed,
    HoldError,
    HoldNotActive,
    HoldNotFound,
    IdempotencyKeyReused,
    InvalidSeats,
    QueueUnavailable,
    RateLimited,
    RoomNotFound,
    SeatsUnavailable,
    ShowtimeClosed,
    ShowtimeExists,
    ShowtimeNotFound,
    TicketNotFound,
    TooManySeatsHeld,
    TooManyStreams,
    UnpricedTickets,
)


def api_error(exc: HoldError) -> ApiError:
    match exc:
        case SeatsUnavailable():
            return ApiError(409, "SEATS_UNAVAILABLE", str(exc), seats=exc.seats, decidedBy=exc.decided_by)
        case InvalidSeats() | UnpricedTickets():
            return ApiError(422, "VALIDATION_ERROR", str(exc), seats=exc.seats)
        case ShowtimeNotFound() | HoldNotFound():
            return ApiError(404, "NOT_FOUND", "not found")
        case HoldNotActive():
            return ApiError(409, "HOLD_NOT_ACTIVE", str(exc))
        case ShowtimeClosed():
            return ApiError(409, "SHOWTIME_CLOSED", str(exc))
        case CancellationClosed():
            return ApiError(409, "CANCELLATION_CLOSED", str(exc))
        case ShowtimeExists():
            return ApiError(409, "SHOWTIME_EXISTS", str(exc))
        case RateLimited() | TooManySeatsHeld() | TooManyStreams():
            return ApiError(429, "RATE_LIMITED", str(exc), headers={"Retry-After": str(exc.retry_after)})
        case IdempotencyKeyReused():
            return ApiError(422, "IDEMPOTENCY_KEY_REUSED", str(exc))
        # The waiting room.
        case AdmissionRequired():
            return ApiError(403, "ADMISSION_REQUIRED", str(exc))
        case RoomNotFound() | TicketNotFound():
            return ApiError(404, "NOT_FOUND", str(exc))
        case QueueUnavailable():
            return ApiError(503, "UNAVAILABLE", str(exc), headers={"Retry-After": "1"})
    return ApiError(422, "VALIDATION_ERROR", str(exc))

