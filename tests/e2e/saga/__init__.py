"""The booking saga checker (scenarios R14, R15 of docs/reliability.md): wait for rest, read everything, judge
every invariant.

    verdict = await check(scope, sources, history)   # history optional (journey runs record one)
    print(verdict.report()); assert not verdict.violations

Also runnable against a running stack (`make up` / `make demo`): `python -m tests.e2e.saga --help`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from . import calls, cancellations, delivery, money, notify, prices, seatmap, seats, timing, vouchers
from .facts import Facts, collect, resolve
from .history import History
from .outcomes import journey_table, outcomes
from .quiesce import Rest, wait_for_rest
from .scope import Scope, Sources
from .verdict import Check

__all__ = ["Scope", "Sources", "Verdict", "check", "judge"]


@dataclass
class Verdict:
    scope: Scope
    rest: Rest
    facts: Facts
    checks: list[Check]
    history: History | None = None
    foreign_mail: int = 0
    read_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def violations(self) -> int:
        return sum(len(c.violations) for c in self.checks)

    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.violations]

    def report(self, samples: int | None = 5) -> str:
        """The figures and every invariant; `samples` violations of each (None: all)."""
        f = self.facts
        lines = [f"saga check: {len(f.showtimes)} showtimes, {len(f.vouchers)} vouchers, {len(f.bookings)} bookings, "
                 f"{len(f.payments)} payments, {len(f.events)} events ({f.redelivered} redelivered copies), "
                 f"{len(f.sessions)} gateway sessions, {len(f.mail)} e-mails of the scope in the sink",
                 f"rest: {'reached' if self.rest.reached else 'NOT reached'} after {self.rest.waited:.1f} s; "
                 f"read in {self.read_seconds:.1f} s"
                 + ("" if self.rest.reached else f", still moving: {self.rest.unsettled}")]
        for key, value in self.extra.items():
            lines.append(f"{key}: {json.dumps(value)}")
        if self.history is not None:
            lines.append(f"journeys run: {len(self.history.journeys)}, calls: "
                         f"{sum(1 for op in self.history.ops if op['type'] == 'invoke')}")
            for scenario, ends in journey_table(self.history, f).items():
                lines.append(f"  {scenario:<20} {json.dumps(ends)}")
        lines.append(f"outcomes: {json.dumps(outcomes(f))}")
        if self.foreign_mail:
            lines.append(f"ticket e-mails delivered by another run's notifier (shared test database): "
                         f"{self.foreign_mail}")
        lines.extend(f"note: {n}" for n in sorted(set(f.notes)))
        lines.append(f"invariants checked: {len(self.checks)}, facts checked: {sum(c.checked for c in self.checks)}, "
                     f"violations: {self.violations}")
        if vacuous := [c.name for c in self.checks if not c.checked]:
            lines.append(f"vacuous this run (nothing to check, e.g. no booking confirmed): {', '.join(vacuous)}")
        for c in self.checks:
            lines.append(f"  {'FAIL' if c.violations else 'ok  '} {c.name:<40} checked {c.checked:>5}  "
                         f"violations {len(c.violations):>4}  ({c.rule})")
            lines.extend(f"         - {v}" for v in c.violations[:samples])
        return "\n".join(lines)


def judge(facts: Facts, sources: Sources, history: History | None = None) -> tuple[list[Check], int]:
    """Every invariant over facts already read; also how many e-mails another run's notifier delivered."""
    tickets, foreign = notify.tickets(facts, sources)
    moves, replay = seatmap.replay(facts)
    checks = [
        seats.single_owner(facts), seats.booked_once(facts), seats.booked_iff_paid(facts),
        money.paid_is_resolved(facts), money.refunded_once(facts), money.states_agree_with_gateway(facts),
        money.charged_as_promised(facts), prices.amounts_are_ticket_prices(facts),
        vouchers.counters(facts), vouchers.discounts(facts), vouchers.one_use_per_payment(facts),
        tickets, notify.points(facts, sources), notify.confirmed_amounts(facts),
        seats.one_effect_per_fact(facts), delivery.nothing_lost(facts), delivery.nothing_dead_lettered(facts),
        seatmap.versions(facts), moves, replay,
        timing.paid_in_time_is_booked(facts, sources), timing.holds_end_within_their_maximum(facts, sources),
        *cancellations.checks(facts),
    ]
    if history is not None:
        checks += [calls.no_bare_errors(history), calls.acknowledged_exists(history, facts),
                   calls.customers_cannot_move_uses(history), calls.quotes_answer(history),
                   calls.retry_gets_voucher_again(history)]
    return checks, foreign


async def check(scope: Scope, sources: Sources, history: History | None = None, *,
                rest_timeout: float = 60.0) -> Verdict:
    scope = await resolve(scope, sources)
    rest = await wait_for_rest(scope, sources, rest_timeout)
    started = time.monotonic()
    facts = await collect(scope, sources)
    read_seconds = time.monotonic() - started
    checks, foreign = judge(facts, sources, history)
    if not rest.reached:
        checks.append(Check("rest", "the saga comes to rest (nothing HELD or PENDING, outboxes drained, lags 0)",
                            1, [f"still moving after {rest.waited:.0f} s: {rest.unsettled}"]))
    return Verdict(scope=scope, rest=rest, facts=facts, checks=checks, history=history, foreign_mail=foreign,
                   read_seconds=read_seconds)
