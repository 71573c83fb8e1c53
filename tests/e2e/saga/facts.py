"""Everything the checker judges, read once after quiescence: four schemas, the topics, the gateway, the mail.

Each service's role sees only its own schema, so each is read through its own DSN. Events are read from the
topic (not from the outboxes): the topic is what other teams see.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import policy
from email.parser import BytesParser
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from ticketing.auth import issue_token
from ticketing.events import BOOKING_EVENTS, BOOKING_EVENTS_DLQ, VOUCHER_RESERVED_DLQ
from ticketing_testing import merchant_auth

from .offsets import KafkaView
from .scope import Scope, Sources

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
KIND = re.compile(r"^<?[0-9a-f-]{36}\.([a-z_]+)@")

SQL = {
    "showtimes": "SELECT showtime_id, seat_map_version, prices::text FROM showtime "
                 "WHERE showtime_id = ANY($1::bigint[])",
    "seats": "SELECT showtime_id, seat_code, status, hold_id::text, booking_id::text, category FROM show_seat "
             "WHERE showtime_id = ANY($1::bigint[])",
    "bookings": "SELECT hold_id::text, booking_id::text, customer_id, showtime_id, seats, amount_cents, status, "
                "payment_id::text, expires_at < now() AS expired, created_at, expires_at, tickets::text "
                "FROM booking WHERE showtime_id = ANY($1::bigint[])",
    "payments": "SELECT payment_id::text, hold_id::text, booking_id::text, customer_id, showtime_id, amount_cents, "
                "discount_cents, voucher_code, status, session_id, refund_id, refund_reason, created_at, expires_at "
                "FROM payment WHERE showtime_id = ANY($1::bigint[]) ORDER BY created_at",
    "outbox": "SELECT event_id::text, published_at IS NOT NULL AS published FROM outbox "
              "WHERE message_key = ANY($1::text[])",
    "vouchers": "SELECT code, total_limit, used_count, flash_sale, discount_amount FROM voucher "
                "WHERE code = ANY($1::text[])",
    "redemptions": "SELECT voucher_code, customer_id, order_id, status FROM voucher_redemption "
                   "WHERE voucher_code = ANY($1::text[])",
    "contacts": "SELECT customer_id FROM customer WHERE customer_id = ANY($1::bigint[])",
    "points": "SELECT booking_id::text, customer_id, amount_cents, points FROM loyalty_points "
              "WHERE booking_id = ANY($1::uuid[])",
    "emails": "SELECT booking_id::text, kind, status, message_id FROM email_outbox WHERE booking_id = ANY($1::uuid[])",
}


@dataclass
class Facts:
    showtimes: dict[int, int] = field(default_factory=dict)  # showtime -> seat_map_version
    prices: dict[int, dict[str, dict[str, int]]] = field(default_factory=dict)  # showtime -> category -> type -> cents
    seats: list[dict[str, Any]] = field(default_factory=list)
    bookings: dict[str, dict[str, Any]] = field(default_factory=dict)  # booking id -> row
    payments: dict[str, dict[str, Any]] = field(default_factory=dict)  # payment id -> row (creation order)
    outbox: dict[str, dict[str, bool]] = field(default_factory=dict)  # hold|payment -> event id -> published
    vouchers: dict[str, dict[str, Any]] = field(default_factory=dict)
    redemptions: list[dict[str, Any]] = field(default_factory=list)
    contacts: set[int] = field(default_factory=set)
    points: list[dict[str, Any]] = field(default_factory=list)
    emails: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)  # distinct by eventId, in topic order
    redelivered: int = 0  # copies of an event id seen again on the topic (at-least-once: allowed)
    dead_letters: list[dict[str, Any]] = field(default_factory=list)
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)  # session id -> the gateway's view
    foreign_sessions: int = 0  # sessions whose reference is no payment of the scope
    mail: list[dict[str, Any]] = field(default_factory=list)  # e-mails in the sink: booking, kind, message id
    seat_maps: dict[int, dict[str, Any]] = field(default_factory=dict)  # GET /showtimes/{id}/seats
    sent_here: set[str] | None = None  # Message-IDs the stack's own notifier sent (None: not known)
    notes: list[str] = field(default_factory=list)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]


async def _rows(dsn: str, sql: str, *args: Any) -> list[dict[str, Any]]:
    conn = await asyncpg.connect(dsn)
    try:
        return [dict(r) for r in await conn.fetch(sql, *args)]
    finally:
        await conn.close()


async def resolve(scope: Scope, sources: Sources) -> Scope:
    """An open scope (None) becomes every showtime and voucher in the databases."""
    showtimes = scope.showtimes
    if showtimes is None:
        showtimes = {r["showtime_id"] for r in await _rows(sources.dsn["hold"], "SELECT showtime_id FROM showtime")}
    vouchers = scope.vouchers
    if vouchers is None:
        vouchers = {r["code"] for r in await _rows(sources.dsn["voucher"], "SELECT code FROM voucher")}
    return Scope(showtimes=showtimes, vouchers=vouchers)


async def read_databases(scope: Scope, sources: Sources, facts: Facts) -> None:
    dsn, showtimes, codes = sources.dsn, sorted(scope.showtimes or ()), sorted(scope.vouchers or ())
    rows = await _rows(dsn["hold"], SQL["showtimes"], showtimes)
    facts.showtimes = {r["showtime_id"]: r["seat_map_version"] for r in rows}
    facts.prices = {r["showtime_id"]: json.loads(r["prices"]) for r in rows}
    facts.seats = await _rows(dsn["hold"], SQL["seats"], showtimes)
    facts.bookings = {r["booking_id"]: {**r, "tickets": json.loads(r["tickets"])}
                      for r in await _rows(dsn["hold"], SQL["bookings"], showtimes)}
    facts.payments = {r["payment_id"]: r for r in await _rows(dsn["payment"], SQL["payments"], showtimes)}
    keys = sorted(facts.bookings)
    message_keys = keys + [f"showtime:{s}" for s in showtimes]  # ShowtimeCancelled is keyed by its showtime
    for schema in ("hold", "payment"):
        facts.outbox[schema] = {r["event_id"]: r["published"]
                                for r in await _rows(dsn[schema], SQL["outbox"], message_keys)}
    facts.vouchers = {r["code"]: r for r in await _rows(dsn["voucher"], SQL["vouchers"], codes)}
    facts.redemptions = await _rows(dsn["voucher"], SQL["redemptions"], codes)
    customers = sorted({b["customer_id"] for b in facts.bookings.values()})
    facts.contacts = {r["customer_id"] for r in await _rows(dsn["notifier"], SQL["contacts"], customers)}
    facts.points = await _rows(dsn["notifier"], SQL["points"], keys)
    facts.emails = await _rows(dsn["notifier"], SQL["emails"], keys)


async def read_topics(scope: Scope, sources: Sources, facts: Facts) -> None:
    showtimes, codes = scope.showtimes or set(), scope.vouchers or set()
    seen: Counter[str] = Counter()
    async with KafkaView(sources.bootstrap) as kafka:
        async for _, value in kafka.read(BOOKING_EVENTS, sources.start_offsets.get(BOOKING_EVENTS)):
            if value.get("showtimeId") in showtimes:
                seen[value["eventId"]] += 1
                if seen[value["eventId"]] == 1:
                    facts.events.append(value)
        for topic in (BOOKING_EVENTS_DLQ, VOUCHER_RESERVED_DLQ):
            async for record, value in kafka.read(topic, sources.start_offsets.get(topic)):
                headers = {k: v.decode(errors="replace") for k, v in record.headers or []}
                ours = headers.get("dlq.consumer", "").startswith(sources.group_prefix)
                if ours and (value.get("showtimeId") in showtimes or value.get("code") in codes):
                    facts.dead_letters.append({"topic": topic, "type": value.get("type"),
                                               "bookingId": value.get("bookingId"),
                                               "error": headers.get("dlq.error", "")})
    facts.redelivered = sum(n - 1 for n in seen.values())


async def read_gateway(sources: Sources, facts: Facts) -> None:
    """The provider's own view of every session of the scope's payments (what money really moved): its Checkout
    Session (Stripe's shape) and the simulator's record of when it was paid and refunded, in one summary:
    status paid | failed | expired | open, amountCents, refundIds, paidAt and expiresAt (our session's end)."""
    references = set(facts.payments)
    async with httpx.AsyncClient(base_url=sources.sim_url, timeout=30, headers=merchant_auth()) as client:
        listed = (await client.get("/sim/sessions")).json()
        for s in listed:
            if s["reference"] not in references:
                facts.foreign_sessions += 1
                continue
            r = (await client.get(f"/v1/checkout/sessions/{s['sessionId']}", params={"expand[]": "payment_intent"}))
            facts.sessions[s["sessionId"]] = _summary(r.json(), s, facts.payments[s["reference"]])


def _summary(session: dict[str, Any], listed: dict[str, Any], payment: dict[str, Any]) -> dict[str, Any]:
    intent = session.get("payment_intent") or {}
    status = ("paid" if session["payment_status"] == "paid" else "expired" if session["status"] == "expired"
              else "failed" if intent.get("status") == "requires_payment_method" else "open")
    paid_at = listed.get("paidAt")
    ends = payment.get("expires_at")
    return {"sessionId": session["id"], "reference": session["client_reference_id"], "status": status,
            "amountCents": session["amount_total"], "refundIds": listed["refundIds"],
            "paidAt": datetime.fromtimestamp(paid_at, UTC).isoformat() if paid_at else None,
            "expiresAt": ends.isoformat() if isinstance(ends, datetime) else ends}


async def read_seat_maps(sources: Sources, facts: Facts) -> None:
    """GET each seat map; it may be up to 2 s stale (cached), so read again until it shows the database's version."""
    headers: dict[str, str] = {}
    async with httpx.AsyncClient(base_url=sources.hold_url, timeout=30) as client:
        for showtime, version in sorted(facts.showtimes.items()):
            for _ in range(20):
                r = await client.get(f"/showtimes/{showtime}/seats", headers=headers)
                if r.status_code == 401 and sources.jwt_secret and not headers:
                    facts.notes.append("GET /showtimes/{id}/seats asks for a token (contract: public); read with one")
                    headers = {"Authorization": f"Bearer {issue_token(sources.jwt_secret, sub='1', role='admin')}"}
                    continue
                r.raise_for_status()
                facts.seat_maps[showtime] = r.json()
                if facts.seat_maps[showtime].get("version") == version:
                    break
                await asyncio.sleep(0.5)


def read_mail(sources: Sources, facts: Facts) -> None:
    if sources.mail_dir is None:
        return
    if sources.sent_log is not None:
        facts.sent_here = set()
        for line in sources.sent_log.read_text(errors="replace").splitlines():
            if '"email.sent"' in line:
                with contextlib.suppress(ValueError):
                    facts.sent_here.add(str(json.loads(line).get("message_id")))
    bookings = set(facts.bookings)
    for path in sorted(Path(sources.mail_dir).glob("*.eml")):
        msg = BytesParser(policy=policy.default).parsebytes(path.read_bytes())
        # A long Message-ID (a cancellation's) is folded onto its own line: its value then starts with a space.
        subject, message_id = str(msg.get("Subject", "")), str(msg.get("Message-ID", "")).strip()
        named = set(UUID.findall(subject)) & bookings
        if not named:
            body = msg.get_body(preferencelist=("plain",))
            named = set(UUID.findall(body.get_content() if body is not None else "")) & bookings
        kind = KIND.match(message_id)
        for booking in named:
            facts.mail.append({"booking": booking, "message_id": message_id, "file": path.name,
                               "kind": kind.group(1) if kind else ("ticket" if "ticket" in subject.lower() else "")})
        facts.notes.extend(f"{path.name} names {len(named)} bookings" for _ in range(len(named) > 1))


async def collect(scope: Scope, sources: Sources) -> Facts:
    facts = Facts()
    await read_databases(scope, sources, facts)
    await read_topics(scope, sources, facts)
    await read_gateway(sources, facts)
    await read_seat_maps(sources, facts)
    read_mail(sources, facts)
    return facts
