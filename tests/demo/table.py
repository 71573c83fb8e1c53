"""The closing table: each row a check over what the databases, the topic, the gateway and the mail say after
the saga came to rest (the saga checker's facts and verdict), never over what customers were told.

    seats sold = capacity                     BOOKED seats of the sale's showtimes; how the sale ended (sold out,
                                              or the --seconds limit, named)
    double sales = 0                          seats.single_owner + seats.booked_once
    voucher uses <= limit                     used_count, CONFIRMED uses and discounted bookings vs the limit
    every late payment refunded               a late payer's money the gateway took: booked, else REFUNDED
    e-mails sent = bookings of known customers  ticket e-mails vs confirmed bookings (BOOKED, or booked then
                                              cancelled) of customers with an address
    tickets priced as the showtime prices     the tickets of the bookings by type; every amount (hold, booking,
                                              payment before discount, points) the sum of its tickets' prices
                                              (prices.amounts_are_tickets)
    cancelled bookings refunded once          only when a booking was cancelled: each refunded in full once, its
                                              voucher use released, one cancellation e-mail (the cancel.* checks),
                                              its seats back on sale (none still its; how many sold again)
    every saga invariant                      all of tests/e2e/saga, violations 0
    holds refused by address = 0              hold-service's own count of requests its per-address limit
                                              refused (/metrics): the customers came from enough addresses
    p50 / p99 per step                        figures (timing goals live in benchmarks, not in checks): as the
                                              customers saw them, and as the services measured them (/metrics)
    load generator                            a figure: its processes' event-loop lag, and whether it was
                                              saturated (then the customer-side figures are partly its own)
    waiting rooms opened themselves ...       --waiting-room auto: each showtime's WaitingRoomOpened (ARRIVALS or
                                              ACTIVE, no operator) during the sale, then its WaitingRoomClosed
                                              (RUSH_OVER), from the topic, with their times from the sale's start
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from rich.table import Table
from rich.text import Text

from ..e2e.saga import Verdict
from ..e2e.saga.cancellations import cancelled_bookings
from ..e2e.saga.outcomes import outcomes
from .figures import STEPS, StepFigures
from .server_figures import ServerFigures, bound


@dataclass
class Row:
    check: str
    figure: str
    ok: bool | None  # None: a figure, not a check


@dataclass
class SaleTable:
    rows: list[Row] = field(default_factory=list)
    steps: dict[str, StepFigures] = field(default_factory=dict)
    server: dict[str, ServerFigures] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> list[Row]:
        return [r for r in self.rows if r.ok is False]

    def to_json(self) -> str:
        return json.dumps({"passed": not self.failed, "rows": [asdict(r) for r in self.rows],
                           "steps": {f: asdict(s) for f, s in self.steps.items()},
                           "server": {f: asdict(s) for f, s in self.server.items()}, "facts": self.facts},
                          indent=2, default=str)

    def render(self) -> Table:
        table = Table(title="CHECKED", title_style="bold", show_lines=False)
        table.add_column("check")
        table.add_column("figure")
        table.add_column("", justify="center")
        for r in self.rows:
            mark = Text("-", style="dim") if r.ok is None else Text("PASS", style="bold green") if r.ok \
                else Text("FAIL", style="bold red")
            table.add_row(r.check, r.figure, mark)
        return table

    def render_steps(self) -> Table:
        """p50 / p99 of each step as the customers saw it and as the services measured it."""
        table = Table(title="per step: customers (the generator's clock) | services (their /metrics)",
                      title_style="bold")
        for column in ("step", "calls", "customers p50 / p99 ms", "services p50 / p99 ms", "services mean ms",
                       "refused", "no answer / 5xx"):
            table.add_column(column, justify="left" if column == "step" else "right")
        for f, s in self.steps.items():
            server = self.server.get(f)
            table.add_row(STEPS[f], str(s.count), f"{s.p50_ms:.1f} / {s.p99_ms:.1f}",
                          f"{bound(server.p50_le_ms)} / {bound(server.p99_le_ms)}" if server else "-",
                          f"{server.mean_ms:.2f}" if server else "-", str(s.refused), str(s.failed))
        return table


def _violations(verdict: Verdict, *names: str) -> int:
    return sum(len(c.violations) for c in verdict.checks if c.name in names)


def judge(verdict: Verdict, *, capacity: int, voucher: str, voucher_limit: int, late_journeys: list[dict[str, Any]],
          steps: dict[str, StepFigures], expiry_plays: bool, hold_ttl: float, ended: str = "",
          server: dict[str, ServerFigures] | None = None, generator: str = "",
          addresses: Counter[str] | None = None, refused: dict[str, int] | None = None) -> SaleTable:
    """`late_journeys`: the history's journeys of the part "pays late" (their payment ids); `ended`: how the
    sale ended (sold out, or the limit that stopped it); `generator`: the load generator's own figures;
    `addresses`: customers per source address, and `refused`: hold-service's refusals by limit (None: not
    read), for the row of the per-address limit (none without `addresses`)."""
    f = verdict.facts
    t = SaleTable(steps=steps, server=server or {})
    booked = sum(1 for s in f.seats if s["status"] == "BOOKED")
    t.rows.append(Row("seats sold = capacity", f"{booked} / {capacity}" + (f" ({ended})" if ended else ""),
                      booked == capacity))

    doubles = _violations(verdict, "seats.single_owner", "seats.booked_once")
    t.rows.append(Row("double sales = 0", str(doubles), doubles == 0))

    v = f.vouchers.get(voucher, {})
    uses = [r for r in f.redemptions if r["voucher_code"] == voucher]
    confirmed = sum(1 for r in uses if r["status"] == "CONFIRMED")
    discounted = sum(1 for p in f.payments.values() if p["voucher_code"] == voucher and p["discount_cents"] > 0
                     and f.bookings.get(p["booking_id"], {}).get("payment_id") == p["payment_id"]
                     and f.bookings[p["booking_id"]].get("status") != "CANCELLED")  # a cancelled one gave it back
    used = int(v.get("used_count", -1))
    voucher_bad = _violations(verdict, "voucher.counters", "voucher.discounts", "voucher.order_is_payment")
    t.rows.append(Row("voucher uses <= limit",
                      f"used_count {used}, confirmed {confirmed}, discounted bookings {discounted}; limit "
                      f"{voucher_limit}",
                      bool(v) and 0 <= used <= voucher_limit and confirmed <= voucher_limit
                      and discounted <= voucher_limit and voucher_bad == 0))

    sessions = {s["reference"]: s for s in f.sessions.values()}
    late_payments = [pid for j in late_journeys for pid in j["payment_ids"]]
    taken = [pid for pid in late_payments if sessions.get(pid, {}).get("status") == "paid"]
    booked_late = [pid for pid in taken if f.bookings.get(f.payments[pid]["booking_id"], {}).get("payment_id") == pid]
    refunded = [pid for pid in taken if f.payments[pid]["status"] == "REFUNDED"]
    unresolved = _violations(verdict, "money.paid_resolved")
    if expiry_plays:
        t.rows.append(Row("every late payment refunded",
                          f"{len(late_journeys)} late payers: money taken {len(taken)}, refunded {len(refunded)}, "
                          f"booked before the hold ended {len(booked_late)}, refused at the gateway "
                          f"{len(late_payments) - len(taken)}; paid and unresolved (all payments) {unresolved}",
                          len(refunded) + len(booked_late) == len(taken) and unresolved == 0))
    else:
        t.rows.append(Row("every late payment refunded",
                          f"no late payer: holds last {hold_ttl:.0f} s here, too long to end within the sale "
                          f"(docs/demo.md); paid and unresolved (all payments) {unresolved}", unresolved == 0))

    cancelled = cancelled_bookings(f)
    known_booked = sum(1 for k, b in f.bookings.items() if (b["status"] == "BOOKED" or k in cancelled)
                       and b["customer_id"] in f.contacts)
    tickets = len({m["booking"] for m in f.mail if m["kind"] == "ticket"}) + verdict.foreign_mail
    mail_bad = _violations(verdict, "mail.one_ticket")
    t.rows.append(Row("e-mails sent = bookings of known customers", f"{tickets} = {known_booked}"
                      + (f" ({verdict.foreign_mail} sent by another run's notifier)" if verdict.foreign_mail else ""),
                      tickets == known_booked and mail_bad == 0))

    t.rows.append(_tickets_row(verdict, cancelled))
    t.rows.append(_cancelled_row(verdict, cancelled) if cancelled else _no_cancellation_row(verdict))

    failed = verdict.failed()
    t.rows.append(Row(f"every saga invariant ({len(verdict.checks)})",
                      f"violations {verdict.violations}" + (f": {', '.join(c.name for c in failed)}" if failed else "")
                      + ("" if verdict.rest.reached else f"; rest NOT reached: {verdict.rest.unsettled}"),
                      verdict.violations == 0))
    if addresses is not None:
        t.rows.append(_address_row(addresses, refused))
    if generator:
        t.rows.append(Row("load generator", generator, None))
    t.facts = {"outcomes": outcomes(f), "bookings": len(f.bookings), "payments": len(f.payments),
               "events": len(f.events), "rest_seconds": round(verdict.rest.waited, 1)}
    return t


def _tickets_row(verdict: Verdict, cancelled: dict[str, Any]) -> Row:
    """The tickets of the bookings (BOOKED, or booked then cancelled) by type, and the prices invariant."""
    f = verdict.facts
    types = Counter(t.get("ticketType") for k, b in f.bookings.items() if b["status"] == "BOOKED" or k in cancelled
                    for t in b.get("tickets") or [])
    bad = _violations(verdict, "prices.amounts_are_tickets")
    figure = ", ".join(f"{kind} {n}" for kind, n in sorted(types.items())) or "no tickets"
    return Row("tickets priced as the showtime prices", f"{figure}; amounts other than their tickets' prices {bad}",
               bad == 0)


def _cancelled_row(verdict: Verdict, cancelled: dict[str, Any]) -> Row:
    """Cancelled bookings: refunded once (the cancel.* checks), and their seats back on sale: none still the
    cancelled booking's; those BOOKED again belong to another booking."""
    f = verdict.facts
    refunded = sum(1 for e in cancelled.values() if f.payments.get(str((e.get("data") or {}).get("paymentId")),
                                                                    {}).get("status") == "REFUNDED")
    by_customer = sum(1 for e in cancelled.values() if (e.get("data") or {}).get("reason") == "CUSTOMER")
    letters = len({m["booking"] for m in f.mail if m["kind"] == "cancellation"})
    known = sum(1 for booking in cancelled if f.bookings.get(booking, {}).get("customer_id") in f.contacts)
    seats = {(e.get("showtimeId"), seat): booking for booking, e in cancelled.items()
             for seat in (e.get("data") or {}).get("seats") or []}
    now = {(s.get("showtime_id"), s["seat_code"]): s for s in f.seats}
    kept = sum(1 for key, booking in seats.items() if now.get(key, {}).get("booking_id") == booking
               and now[key]["status"] != "AVAILABLE")
    sold_again = sum(1 for key, booking in seats.items() if now.get(key, {}).get("status") == "BOOKED"
                     and now[key].get("booking_id") != booking)
    bad = _violations(verdict, "cancel.refunded_once", "cancel.voucher_released", "mail.one_cancellation",
                      "cancel.showtime_closed")
    return Row("cancelled bookings refunded once",
               f"{len(cancelled)} cancelled ({by_customer} by their customers): refunded {refunded}, cancellation "
               f"e-mails in the sink {letters} (customers with an address {known}); their {len(seats)} seats back on "
               f"sale, {sold_again} sold again, {kept} still theirs; violations {bad}",
               refunded == len(cancelled) and kept == 0 and bad == 0)


def _no_cancellation_row(verdict: Verdict) -> Row:
    """No booking was cancelled in the sale (nothing to check): what the customers of "cancels booking" did."""
    journeys = verdict.history.journeys.values() if verdict.history is not None else ()
    did = Counter(note for j in journeys if j.scenario == "cancels booking" for note in j.notes
                  if note.startswith(("kept_booking", "cancel")))
    return Row("cancelled bookings refunded once",
               "no booking cancelled in this sale; the customers of \"cancels booking\": "
               + (", ".join(f"{note} {n}" for note, n in sorted(did.items())) or "none got a booking"), None)


def _address_row(addresses: Counter[str], refused: dict[str, int] | None) -> Row:
    crowd = (f"customers from {len(addresses)} addresses, at most {max(addresses.values(), default=0)} "
             f"per address" if addresses else "no customer")
    if refused is None or "address" not in refused:
        return Row("holds refused by address = 0", f"hold-service's refusals by limit not read ({crowd})", False)
    return Row("holds refused by address = 0",
               f"hold-service refused {refused['address']} by address (HOLD_RATE_LIMIT_PER_IP_PER_MINUTE), "
               f"{refused.get('customer', 0)} by customer (HOLD_RATE_LIMIT_PER_MINUTE); {crowd}",
               refused["address"] == 0)


ROOMS_CHECK = "waiting rooms opened themselves at the rush and closed after"


def rooms_changed(facts: Any) -> bool:
    """Whether any waiting room of the sale opened or closed (on `make up`, a large sale opens rooms nobody set)."""
    return any(e.get("type") in ("WaitingRoomOpened", "WaitingRoomClosed") for e in facts.events)


def rooms_row(facts: Any, showtimes: list[int], opened_at: datetime, check: bool = True) -> Row:
    """--waiting-room auto (`check`): every showtime's room opened itself (ARRIVALS or ACTIVE; no operator's event)
    and its last event closed it (RUSH_OVER), as the topic says; their times from the sale's opening. Otherwise
    the same words as a figure (rooms that opened themselves in a sale that did not ask for it)."""
    parts, ok = [], True
    for showtime in showtimes:
        events = [e for e in facts.events if e.get("showtimeId") == showtime
                  and e.get("type") in ("WaitingRoomOpened", "WaitingRoomClosed")]
        events.sort(key=lambda e: str(e["occurredAt"]))
        said = [f"{'opened' if e['type'] == 'WaitingRoomOpened' else 'closed'} ({e['data']['reason']}) at "
                f"+{_since(e['occurredAt'], opened_at):.1f} s" for e in events]
        reasons = [(e["type"], e["data"]["reason"]) for e in events]
        fine = (bool(events) and reasons[0][0] == "WaitingRoomOpened" and reasons[0][1] in ("ARRIVALS", "ACTIVE")
                and reasons[-1] == ("WaitingRoomClosed", "RUSH_OVER") and all(r != "OPERATOR" for _, r in reasons))
        ok = ok and fine
        parts.append(f"{showtime}: " + (", ".join(said) if said else "never opened"))
    return Row(ROOMS_CHECK if check else "waiting rooms", "; ".join(parts), ok if check else None)


def _since(at: Any, start: datetime) -> float:
    when = at if isinstance(at, datetime) else datetime.fromisoformat(str(at).replace("Z", "+00:00"))
    return (when - start).total_seconds()
