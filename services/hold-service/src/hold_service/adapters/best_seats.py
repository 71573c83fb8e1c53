"""Best available in Postgres: sql choose_seats chooses and locks a run of seats, then the picked hold's own
statement (repository.take) takes them, in one transaction."""

from __future__ import annotations

from dataclasses import replace

import asyncpg
from ticketing.unit_of_work import Conn

from hold_service.adapters.repository import Q, cap_refusal, take
from hold_service.domain.errors import SeatsUnavailable, ShowtimeNotFound
from hold_service.domain.model import DEFAULT_TICKET_TYPE, BestSeats, TakeSeats, Verdict


async def take_best(conn: Conn, request: TakeSeats, best: BestSeats, cause: str = "[]",
                    tries: int = 50) -> tuple[TakeSeats, Verdict]:
    """Best available in one transaction: sql choose_seats chooses and locks the seats (trying at most `tries`
    runs, and under the no-lone-seat rule the seats beside them), then sql take_seats takes them as a picked hold
    (the same verdict, events and cap at COMMIT)."""
    try:
        async with conn.transaction():
            chosen = await conn.fetchval(Q.choose_seats, request.showtime_id, best.count, best.category,
                                         best.together, tries)
            if chosen is None:
                raise ShowtimeNotFound(f"showtime {request.showtime_id}")
            if not chosen:
                raise SeatsUnavailable([], together=False)
            taken = chosen_hold(request, best, chosen)
            return taken, await take(conn, taken, cause, beside_locked=True)
    except asyncpg.PostgresError as exc:
        if (refused := cap_refusal(exc)) is not None:
            raise refused from exc
        raise


def chosen_hold(request: TakeSeats, best: BestSeats, chosen: list[str]) -> TakeSeats:
    """The hold of the seats chosen (in the order of the row), each with its ticket type, in seat-code order."""
    kinds = dict(zip(chosen, best.ticket_types or (DEFAULT_TICKET_TYPE,) * len(chosen), strict=True))
    seats = sorted(chosen)
    return replace(request, seats=seats, ticket_types=tuple(kinds[s] for s in seats))
