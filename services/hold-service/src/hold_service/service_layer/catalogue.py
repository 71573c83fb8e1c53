"""What's on (GET /showtimes) and a customer's bookings (GET /bookings).

The catalogue is public and read by everyone who opens the site, so an API process keeps each answer for
CATALOGUE_CACHE_SECONDS: however many ask meanwhile, Postgres is asked once per page (one load at a time,
the others wait for it), and its ETag (a digest of the body) lets a client that has it get a 304.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from dataclasses import dataclass

from ticketing.tickets import TicketPayload

from hold_service.domain.catalogue import BookingView, CatalogueQuery
from hold_service.domain.errors import HoldNotFound
from hold_service.service_layer.ports import Deps

PATH = "/showtimes"  # GET /showtimes, whose answers name their next page
MAX_BOOKINGS = 200
MAX_PAGES = 1000  # answers kept per process (distinct queries); past it they are all dropped


@dataclass(frozen=True)
class CataloguePage:
    etag: str
    body: bytes


async def whats_on(query: CatalogueQuery, deps: Deps) -> CataloguePage:
    """The page for `query`, from this process' memory when it is fresh enough."""
    now, pages = asyncio.get_running_loop().time(), deps.catalogue_pages
    kept = pages.get(query)
    if kept is None or kept[0] <= now:
        if len(pages) >= MAX_PAGES:
            pages.clear()
        kept = (now + deps.settings.catalogue_cache_seconds, asyncio.ensure_future(_load(query, deps)))
        pages[query] = kept
        kept[1].add_done_callback(lambda task: _forget_failed(query, kept, pages, task))
    page: CataloguePage = await asyncio.shield(kept[1])
    return page


def _forget_failed(query: CatalogueQuery, kept: object, pages: dict, task: asyncio.Future) -> None:  # type: ignore[type-arg]
    """A load that failed is not kept: the next reader asks again."""
    if task.cancelled() or task.exception() is not None:
        if pages.get(query) is kept:
            del pages[query]


async def _load(query: CatalogueQuery, deps: Deps) -> CataloguePage:
    async with deps.statements() as uow:
        body = await uow.holds.catalogue(query, deps.settings.sales_close_minutes_before_start,
                                         deps.settings.catalogue_page_size, f"{PATH}?{query.next_page()}")
    return CataloguePage(f'"{hashlib.blake2b(body, digest_size=12).hexdigest()}"', body)


async def my_bookings(customer_id: int, deps: Deps) -> list[BookingView]:
    async with deps.uow() as uow:
        return await uow.holds.bookings_of(customer_id, MAX_BOOKINGS)


async def booked_ticket(booking_id: uuid.UUID, customer_id: int, deps: Deps) -> str:
    """The signed ticket of the customer's own BOOKED booking; any other booking is not found (no oracle)."""
    async with deps.uow() as uow:
        hold = await uow.holds.lock_by_booking(booking_id)  # its row lock ends with this read's transaction
    if hold is None or not hold.visible_to(customer_id) or hold.status != "BOOKED":
        raise HoldNotFound(str(booking_id))
    ticket = ticket_of(BookingView(hold, "", hold.expires_at, None, None, "UTC"), deps)
    assert ticket is not None
    return ticket


def ticket_of(view: BookingView, deps: Deps) -> str | None:
    """A BOOKED booking's signed ticket: the same text the notifier's e-mail encodes (one key, QR_SIGNING_KEY,
    over the same payload); None for any other status."""
    hold = view.hold
    if hold.status != "BOOKED":
        return None
    return deps.tickets.sign(TicketPayload(str(hold.booking_id), hold.showtime_id, tuple(hold.seats)))
