"""Delivery: every committed outbox row of the scope reached the topic, and no consumer gave up on one."""

from __future__ import annotations

from .facts import Facts
from .verdict import Check


def nothing_lost(facts: Facts) -> Check:
    check = Check("events.none_lost", "every outbox row of the scope (hold, payment) is published and on the topic")
    on_topic = {str(e["eventId"]) for e in facts.events}
    for schema, rows in sorted(facts.outbox.items()):
        for event_id, published in sorted(rows.items()):
            check.expect(published and event_id in on_topic,
                         f"{schema} outbox event {event_id}: published={published}, "
                         f"on the topic={event_id in on_topic}")
    return check


def nothing_dead_lettered(facts: Facts) -> Check:
    """A dead letter is an effect that never happened (a refund, a confirmation, a release)."""
    check = Check("events.none_dead_lettered", "no event of the scope parked in a DLQ by the stack's consumers")
    check.checked = len(facts.events)
    for d in facts.dead_letters:
        check.violations.append(f"{d['topic']}: {d['type']} of booking {d['bookingId']}: {d['error'][:160]}")
    return check
