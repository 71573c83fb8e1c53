"""A consumer of booking-events that keeps every showtime's seat map, as another team would write one.

It needs only aiokafka (and httpx for the snapshot); nothing of the platform's code. What it shows:
- de-duplicate on `eventId` (delivery is at least once);
- apply a showtime's seat events in `seatMapVersion` order: events of different bookings come from
  different partitions, so a later version can arrive first; it waits in a buffer until the gap closes;
- a map that starts mid-stream (or sees a gap that does not close) is loaded from
  `GET /showtimes/{id}/seats`, which gives the map with its version, and then follows the events after it.

    python seat_map_consumer.py --bootstrap 127.0.0.1:9092 [--group my-team-seat-maps] [--hold-url URL]
                                [--exit-when-idle SECONDS] [--json]

A production cluster is reached over TLS, usually with a SASL user (the password is read from the environment,
KAFKA_SASL_PASSWORD by default, never from the command line, where `ps` would show it):

    KAFKA_SASL_PASSWORD=... python seat_map_consumer.py --bootstrap kafka.example.net:9093 \
        --security-protocol SASL_SSL --sasl-mechanism SCRAM-SHA-512 --sasl-username my-team \
        --ssl-cafile cluster-ca.crt [--ssl-certfile me.crt --ssl-keyfile me.key] --group my-team-seat-maps
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.helpers import create_ssl_context

SEAT_EVENTS = {"SeatsHeld": "HELD", "SeatsReleased": "AVAILABLE", "BookingConfirmed": "BOOKED",
               "BookingCancelled": "AVAILABLE"}


@dataclass
class SeatMap:
    version: int = 0  # the last version applied; 0: a new showtime, nothing applied yet
    seats: dict[str, str] = field(default_factory=dict)  # seat code -> AVAILABLE | HELD | BOOKED
    waiting: dict[int, dict[str, Any]] = field(default_factory=dict)  # version -> an event that came early

    def offer(self, event: dict[str, Any]) -> list[int]:
        """Take one seat event; apply it and every buffered one that follows it. Returns the versions applied."""
        version = event["data"]["seatMapVersion"]
        if version > self.version:
            self.waiting[version] = event
        return self._drain()

    def _drain(self) -> list[int]:
        applied = []
        while (following := self.waiting.pop(self.version + 1, None)) is not None:
            status = SEAT_EVENTS[following["type"]]
            for seat in following["data"]["seats"]:
                self.seats[seat] = status
            self.version += 1
            applied.append(self.version)
        return applied

    def load(self, snapshot: dict[str, Any]) -> None:
        """Start from `GET /showtimes/{id}/seats`; buffered events after its version still apply."""
        self.version = snapshot["version"]
        self.seats = {s["code"]: s["status"] for s in snapshot["seats"]}
        self.waiting = {v: e for v, e in self.waiting.items() if v > self.version}
        self._drain()


class SeatMaps:
    def __init__(self) -> None:
        self.maps: dict[int, SeatMap] = {}
        self.seen: set[str] = set()  # event ids applied or buffered (a real consumer would bound this)

    def handle(self, event: dict[str, Any]) -> None:
        if event.get("type") not in SEAT_EVENTS or event["eventId"] in self.seen:
            return  # another type, or a redelivered copy
        self.seen.add(event["eventId"])
        self.maps.setdefault(event["showtimeId"], SeatMap()).offer(event)

    def gaps(self) -> list[int]:
        """Showtimes with events waiting behind a missing version (reload them from the API)."""
        return [sid for sid, m in self.maps.items() if m.waiting]


async def snapshot(hold_url: str, showtime_id: int) -> dict[str, Any]:
    import httpx

    async with httpx.AsyncClient(base_url=hold_url, timeout=5) as client:
        response = await client.get(f"/showtimes/{showtime_id}/seats")
        response.raise_for_status()
        return dict(response.json())


def security(args: argparse.Namespace) -> dict[str, Any]:
    """aiokafka's keyword arguments for the cluster's security: TLS (SSL, SASL_SSL) with the CA that signed the
    brokers' certificates (the system's trust store without one) and an optional client certificate; SASL
    (SASL_SSL, SASL_PLAINTEXT) with a user whose password comes from the environment."""
    options: dict[str, Any] = {"security_protocol": args.security_protocol}
    if args.security_protocol.endswith("SSL"):
        context = create_ssl_context(cafile=args.ssl_cafile, certfile=args.ssl_certfile, keyfile=args.ssl_keyfile)
        context.check_hostname = not args.no_check_hostname
        options["ssl_context"] = context
    if args.security_protocol.startswith("SASL"):
        password = os.environ.get(args.sasl_password_env, "")
        if not args.sasl_username or not password:
            raise SystemExit(f"{args.security_protocol} needs --sasl-username and ${args.sasl_password_env}")
        options.update(sasl_mechanism=args.sasl_mechanism, sasl_plain_username=args.sasl_username,
                       sasl_plain_password=password)
    return options


async def run(args: argparse.Namespace) -> SeatMaps:
    maps = SeatMaps()
    consumer = AIOKafkaConsumer("booking-events", bootstrap_servers=args.bootstrap, group_id=args.group,
                                auto_offset_reset="earliest", enable_auto_commit=args.group is not None,
                                **security(args))
    await consumer.start()
    try:
        idle = 0.0
        while args.exit_when_idle is None or idle < args.exit_when_idle:
            batches = await consumer.getmany(timeout_ms=500)
            idle = 0.0 if batches else idle + 0.5
            for records in batches.values():
                for record in records:
                    maps.handle(json.loads(record.value))
            if args.hold_url and not batches:
                for showtime_id in maps.gaps():
                    maps.maps[showtime_id].load(await snapshot(args.hold_url, showtime_id))
    finally:
        await consumer.stop()
    return maps


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--group", default=None, help="a consumer group (commits offsets); none: read all")
    parser.add_argument("--hold-url", default=None, help="hold-service, to load a map that has a gap")
    parser.add_argument("--exit-when-idle", type=float, default=None, help="stop after this many idle seconds")
    parser.add_argument("--json", action="store_true", help="print the maps as JSON when stopping")
    tls = parser.add_argument_group("security (a production cluster)")
    tls.add_argument("--security-protocol", default="PLAINTEXT",
                     choices=["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"])
    tls.add_argument("--ssl-cafile", default=None, help="PEM of the CA that signed the brokers' certificates")
    tls.add_argument("--ssl-certfile", default=None, help="PEM client certificate, for mutual TLS")
    tls.add_argument("--ssl-keyfile", default=None, help="PEM key of the client certificate")
    tls.add_argument("--no-check-hostname", action="store_true", help="accept a certificate for another name")
    tls.add_argument("--sasl-mechanism", default="SCRAM-SHA-512", choices=["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
    tls.add_argument("--sasl-username", default=None)
    tls.add_argument("--sasl-password-env", default="KAFKA_SASL_PASSWORD",
                     help="the environment variable holding the SASL password")
    return parser


def main() -> int:
    args = parser().parse_args()
    maps = asyncio.run(run(args))
    if args.json:
        json.dump({sid: {"version": m.version, "seats": m.seats, "waiting": sorted(m.waiting)}
                   for sid, m in maps.maps.items()}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
