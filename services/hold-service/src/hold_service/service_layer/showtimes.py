"""Showtimes and their seat map."""

from __future__ import annotations

from dataclasses import replace

from hold_service.domain.commands import CreateShowtime
from hold_service.domain.errors import ShowtimeExists, ShowtimeNotFound
from hold_service.domain.hall import check_prices, layout_hall, ranked, row_ranks, rows_hall
from hold_service.service_layer.ports import Deps
from hold_service.service_layer.seat_map_ports import SeatMapSubscription, SeatMapView


async def create_showtime(cmd: CreateShowtime, deps: Deps) -> int:
    """Returns the number of seats created."""
    places = layout_hall(cmd.layout) if cmd.layout is not None else rows_hall(cmd.rows or {})
    places = ranked(places, row_ranks(cmd.layout))
    check_prices(cmd.details.prices, places)
    details = replace(cmd.details, currency=cmd.details.currency or deps.settings.currency)
    async with deps.uow() as uow:
        if not await uow.holds.add_showtime(details, places):
            raise ShowtimeExists(f"showtime {cmd.details.showtime_id} exists")
        await uow.commit()
    return len(places)


async def adopt_currency(deps: Deps) -> None:
    """The showtimes created without a currency (by the previous release while an upgrade rolls out) get
    CURRENCY; a partial index makes it cheap when there is none (every sweep)."""
    async with deps.uow() as uow:
        await uow.holds.adopt_currency(deps.settings.currency)
        await uow.commit()


async def seat_map(showtime_id: int, deps: Deps) -> SeatMapView:
    found = await deps.seat_maps.get(showtime_id)
    if found is None:
        raise ShowtimeNotFound(f"showtime {showtime_id}")
    return found


async def follow_seat_map(showtime_id: int, address: str, deps: Deps) -> SeatMapSubscription:
    """The map now and every change after it, in version order (until the subscription is closed); at most
    SEAT_MAP_MAX_STREAMS_PER_ADDRESS at once from one client `address` (TooManyStreams)."""
    subscription = await deps.seat_maps.subscribe(showtime_id, address)
    if subscription is None:
        raise ShowtimeNotFound(f"showtime {showtime_id}")
    return subscription
