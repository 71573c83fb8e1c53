"""The live terminal dashboard (rich): seats sold / held / free per showtime, the waiting room's queue,
customers, requests/s and p50/p99 per step, redrawn a few times a second while the sale runs."""

from __future__ import annotations

import time

from rich.console import Group
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from .figures import STEPS, Measures
from .sale import Sale


def _bar(sold: int, held: int, total: int) -> Table:
    bar = Table.grid()
    bar.add_column(width=32)
    bar.add_row(ProgressBar(total=max(1, total), completed=sold + held, width=32, complete_style="green",
                            finished_style="bold green"))
    return bar


def render(sale: Sale, measures: Measures) -> Group:
    now = time.monotonic()
    elapsed = now - sale.started if sale.started else 0.0
    cfg = sale.cfg
    ttl = f"{sale.hold_ttl:.0f} s" if sale.hold_ttl else "?"
    head = Text.assemble(
        ("FLASH SALE ", "bold magenta"), (f"on {sale.platform.name}  ", "dim"),
        (f"{elapsed:5.1f} s / {cfg.seconds:.0f} s   ", "bold"),
        f"customers {sale.arrived}/{cfg.customers} arrived, {sale.shopping} shopping, {sale.done} left   ",
        f"holds last {ttl}   ", f"voucher {sale.voucher} (limit {cfg.voucher_limit})")
    seats = Table(expand=False, box=None, padding=(0, 1))
    for column in ("showtime", "sold", "held", "free", "", "version"):
        seats.add_column(column, justify="right" if column not in ("showtime", "") else "left")
    if cfg.room_auto:
        seats.add_column("room", justify="left")
    if cfg.waiting_room or cfg.room_auto:
        seats.add_column("queue", justify="right")
        seats.add_column("choosing", justify="right")
    for showtime, counts in sale.seats.items():
        row = [str(showtime), Text(str(counts.booked), style="bold green"), Text(str(counts.held), style="yellow"),
               str(counts.available), _bar(counts.booked, counts.held, cfg.seats), str(counts.version)]
        room = sale.rooms.get(showtime, {})
        if cfg.room_auto:
            row.append(Text("on", style="bold yellow") if room.get("enabled") else Text("off", style="dim"))
        if cfg.waiting_room or cfg.room_auto:
            row += [str(room.get("queueLength", "-")), str(room.get("active", "-"))]
        seats.add_row(*row)
    total = Text.assemble(("sold ", "dim"), (f"{sale.booked()}/{cfg.capacity}", "bold green"),
                          ("   requests/s ", "dim"), (f"{measures.per_second(now - sale.history.t0):6.0f}", "bold"))
    steps = Table(box=None, padding=(0, 1))
    for column in ("step", "calls", "p50 ms", "p99 ms", "refused", "no answer / 5xx"):
        steps.add_column(column, justify="left" if column == "step" else "right")
    for f, s in measures.steps().items():
        steps.add_row(STEPS[f], str(s.count), f"{s.p50_ms:.1f}", f"{s.p99_ms:.1f}", str(s.refused),
                      Text(str(s.failed), style="bold red" if s.failed else ""))
    return Group(Panel(Group(head, Text(), seats, Text(), total), title="seats", border_style="magenta"),
                 Panel(steps, title="per step, as customers saw it", border_style="cyan"))
