"""The one table from domain refusals to the contract's error codes; `ApiError.response()` writes the body."""

from __future__ import annotations

from datetime import UTC, datetime

from ticketing.api.errors import ApiError

from hold_service.domain.errors import (
    AdmissionRequired,
    AlreadyCheckedIn,
    CancellationClosed,
    CheckinClosed,
    HoldError,
    HoldNotActive,
    HoldNotFound,
    IdempotencyKeyReused,
    InvalidScan,
    InvalidSeats,
    LoneSeat,
    QueueUnavailable,
    RateLimited,
    RoomNotFound,
    SeatsUnavailable,
    ShowtimeClosed,
    ShowtimeExists,
    ShowtimeNotFound,
    TicketInvalid,
    TicketNotFound,
    TicketRevoked,
    TooEarly,
    TooManySeatsHeld,
    TooManyStreams,
    UnpricedTickets,
    WrongShowtime,
)


def api_error(exc: HoldError) -> ApiError:
    match exc:
        case SeatsUnavailable(together=None):
            return ApiError(409, "SEATS_UNAVAILABLE", str(exc), seats=exc.seats, decidedBy=exc.decided_by)
        case SeatsUnavailable():
            return ApiError(409, "SEATS_UNAVAILABLE", str(exc), seats=exc.seats, decidedBy=exc.decided_by,
                            together=exc.together)
        case LoneSeat():
            return ApiError(409, "LONE_SEAT", str(exc), seats=exc.lone, suggested=exc.suggested)
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
        # The door.
        case AlreadyCheckedIn():
            return ApiError(409, "ALREADY_CHECKED_IN", str(exc), at=_utc(exc.at), door=exc.door)
        case TicketInvalid():
            return ApiError(422, "TICKET_INVALID", str(exc))
        case TicketRevoked():
            return ApiError(409, "TICKET_REVOKED", str(exc))
        case WrongShowtime():
            return ApiError(409, "WRONG_SHOWTIME", str(exc))
        case TooEarly():
            return ApiError(409, "TOO_EARLY", str(exc))
        case CheckinClosed():
            return ApiError(409, "CHECKIN_CLOSED", str(exc))
        case InvalidScan():
            return ApiError(422, "VALIDATION_ERROR", str(exc))
    return ApiError(422, "VALIDATION_ERROR", str(exc))



def _utc(moment: datetime) -> str:
    """A time as the API writes them: ISO-8601 in UTC with Z."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
