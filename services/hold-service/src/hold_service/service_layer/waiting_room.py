"""The waiting room of a hot showtime (docs/waiting-room.md).

An operator turns a showtime's room on with an active limit and an opening time. Customers join its queue
and poll their ticket; the room admits them in steps (room_steps.py), first the pre-opening joiners in a
shuffled order, then first come, first served, never more than the active limit choosing seats at once
and no more than there are seats left to choose from. An admitted customer's poll hands him a signed
admission token, which POST holds requires while the room is on. Paying or cancelling ends his slot at
once, and so does his hold expiring unpaid (the worker's consumer, on SeatsReleased); otherwise it ends with the
token. Queued customers who stop polling are dropped when their turn comes.
Nothing in a process decides who comes in: the queue is in Redis, the configuration in Postgres.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import replace
from datetime import UTC, datetime

from ticketing.logs import log_action

from hold_service.domain.commands import ConfigureRoom, JoinQueue
from hold_service.domain.errors import (
    AdmissionRequired,
    QueueUnavailable,
    RateLimited,
    RoomNotFound,
    ShowtimeClosed,
    ShowtimeNotFound,
    TicketNotFound,
)
from hold_service.domain.model import HoldSeats
from hold_service.domain.waiting_room import (
    AdmissionPass,
    Joined,
    QueueStatus,
    QueueView,
    RoomConfig,
    RoomFigures,
    Ticket,
    estimated_wait,
    from_ms,
    is_visitor,
    to_ms,
)
from hold_service.service_layer.ports import Deps
from hold_service.service_layer.room_rush import note_arrival, operator_changed
from hold_service.service_layer.room_steps import advance_room

logger = logging.getLogger(__name__)


async def configure_room(cmd: ConfigureRoom, deps: Deps) -> RoomConfig:
    """The operator's mode (on, off: forced; auto: room_rush.py decides), with WaitingRoomOpened or
    WaitingRoomClosed{OPERATOR} when it turns the room on or off."""
    got = await deps.rooms.configure(cmd)
    if got is None:
        raise ShowtimeNotFound(f"showtime {cmd.showtime_id}")
    config, changed = got
    log_action(logger, "room.configured", showtime_id=cmd.showtime_id, mode=config.mode, enabled=config.enabled,
               active_limit=cmd.active_limit, opens_at=str(cmd.opens_at))
    if changed:
        operator_changed(config)
    return config


async def room_for_page(showtime_id: int, customer_id: int | None,
                        deps: Deps) -> tuple[RoomConfig, RoomFigures | None]:
    """The seat-map page's first look (GET /showtimes/{id}/waiting-room): a customer's is an arrival at the
    showtime (its automatic room counts him), then the room as the operator's view has it. RoomNotFound: no
    room."""
    if customer_id is not None:
        await note_arrival(showtime_id, customer_id, deps)
    return await room_overview(showtime_id, deps)


async def room_overview(showtime_id: int, deps: Deps) -> tuple[RoomConfig, RoomFigures | None]:
    """The operator's view: the configuration and the figures of the last step (None: none yet, or Redis
    is unreachable)."""
    config = await deps.rooms.config(showtime_id)
    if config is None:
        raise RoomNotFound(f"showtime {showtime_id} has no waiting room")
    return config, await deps.queue.figures(showtime_id)


async def open_room(showtime_id: int, deps: Deps) -> RoomConfig:
    config = await deps.rooms.config(showtime_id)
    if config is None or not config.enabled:
        raise RoomNotFound(f"showtime {showtime_id} has no waiting room open")
    return config


async def join_queue(cmd: JoinQueue, deps: Deps) -> tuple[str, Joined]:
    """The signed ticket and where it stands. Joining twice gives the same ticket while it is live (a
    customer's; a visitor, with no token, gets a new place each time). A joiner is an arrival at the showtime
    (its automatic room counts him)."""
    customer = cmd.customer_id if cmd.customer_id is not None else -1 - secrets.randbits(62)  # a visitor's own
    await note_arrival(cmd.showtime_id, customer, deps)
    config = await open_room(cmd.showtime_id, deps)
    if not config.on_sale(datetime.now(UTC), deps.settings.sales_close_minutes_before_start):
        raise ShowtimeClosed("sales of this showtime are closed")
    if cmd.address is not None:
        if cmd.customer_id is None and (wait := await deps.admission.address_wait(cmd.address, anonymous=True)):
            raise RateLimited(wait)
        if (wait := await deps.admission.address_wait(cmd.address)) is not None:
            raise RateLimited(wait)
    offer = Ticket(cmd.showtime_id, customer, nonce=secrets.token_hex(8), joined_us=0)
    joined = await deps.queue.join(offer, to_ms(config.opens_at))
    if joined is None:
        raise QueueUnavailable("the waiting room is unavailable, try again shortly")
    return deps.credentials.ticket(joined.ticket), replace(joined, opens_at=config.opens_at)


async def queue_status(text: str, customer_id: int | None, deps: Deps) -> QueueStatus:
    """GET /queue/{ticket}: one Redis call; the poll that falls due also takes the room's next step. A
    visitor's ticket is shown to anyone holding it; once admitted, the first customer whose token comes with
    it claims its place (claim_visitor)."""
    ticket = deps.credentials.read_ticket(text)
    visitor = ticket is not None and is_visitor(ticket.customer_id)
    if ticket is None or (not visitor and ticket.customer_id != customer_id):
        raise TicketNotFound("no such ticket")  # another customer's ticket too: no oracle
    config = await deps.rooms.config(ticket.showtime_id)
    if config is None or not config.enabled:
        return QueueStatus(admitted=True)  # no room (any more): holds need no token, nor a visitor a sign-in
    if visitor and (claimed := await claim_visitor(ticket, customer_id, deps)) is not None:
        return _status(claimed, ticket, config, deps, customer_id)
    opens_at = to_ms(config.opens_at)
    view = await deps.queue.poll(ticket, opens_at)
    if view is not None and view.step_due:
        await advance_room(ticket.showtime_id, deps)
        view = await deps.queue.poll(ticket, opens_at)
    if view is None:
        raise QueueUnavailable("the waiting room is unavailable, try again shortly")
    if visitor and view.state == "admitted" and customer_id is not None:
        view = await claim_visitor(ticket, customer_id, deps) or replace(view, state="gone")
    return _status(view, ticket, config, deps, customer_id)


async def claim_visitor(ticket: Ticket, customer_id: int | None, deps: Deps) -> QueueView | None:
    """The visitor's place as the customer's (admitted, its slot moved to him) if he owns it, or None: nobody
    claimed it yet (or it is not admitted yet). Another customer's claim: TicketNotFound, as a stranger's
    ticket."""
    got = await deps.queue.claim(ticket, customer_id)
    if got is None:
        raise QueueUnavailable("the waiting room is unavailable, try again shortly")
    what, slot_ms = got
    if what == "taken":
        raise TicketNotFound("no such ticket")
    if what == "none":
        return None
    return QueueView(state="admitted" if slot_ms else "gone", position=None, slot_ms=slot_ms, sold_out=False,
                     rate_per_minute=0.0, paused_until_ms=0, now_ms=0, step_due=False)


def _status(view: QueueView, ticket: Ticket, config: RoomConfig, deps: Deps,
            customer_id: int | None) -> QueueStatus:
    if view.state == "gone":
        raise TicketNotFound("this ticket's place has ended; join the queue again")
    if view.state == "admitted":
        if customer_id is None:  # a visitor's ticket: a customer's token claims it
            return QueueStatus(admitted=True, expires_at=from_ms(view.slot_ms), sold_out=view.sold_out,
                               sign_in=True)
        token = deps.credentials.admission_token(AdmissionPass(customer_id, ticket.showtime_id, view.slot_ms))
        return QueueStatus(admitted=True, admission_token=token, expires_at=from_ms(view.slot_ms),
                           sold_out=view.sold_out)
    wait = estimated_wait(view, config, deps.settings.admission_token_ttl_seconds)
    return QueueStatus(admitted=False, position=view.position, estimated_wait_seconds=wait,
                       sold_out=view.sold_out, opens_at=config.opens_at)


async def admission_for(cmd: HoldSeats, deps: Deps) -> AdmissionPass | None:
    """The customer's admission while the showtime's room is on (None: it is off); raises AdmissionRequired.
    Whether its slot is still his is checked in Redis with the hold's other checks (Admission.admit)."""
    config = await deps.rooms.config(cmd.showtime_id)
    if config is None or not config.enabled:
        return None
    admission = deps.credentials.read_admission_token(cmd.admission_token) if cmd.admission_token else None
    if admission is None or not admission.admits(cmd.customer_id, cmd.showtime_id):
        raise AdmissionRequired("this showtime has a waiting room: join its queue for an admission token")
    return admission


async def end_slot(showtime_id: int, customer_id: int, deps: Deps) -> None:
    """The customer paid, cancelled or let his hold expire: his slot goes to the next in the queue."""
    if await deps.rooms.config(showtime_id) is not None:
        await deps.queue.leave(showtime_id, customer_id)
