"""hold-service settings: the only place that reads the environment."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import NoDecode
from ticketing.settings import ServiceSettings


class HoldSettings(ServiceSettings):
    service_name: str = "hold-service"
    database_url: str = Field(
        default="postgresql://postgres@127.0.0.1:5432/ticketing",
        validation_alias=AliasChoices("HOLD_DATABASE_URL", "DATABASE_URL"),
    )
    hold_ttl_seconds: float = Field(default=600, gt=0)
    # A hold lasts at most this long from its creation, extensions included (POST /holds/{id}/extend: at
    # checkout, to the payment session's end + its grace; docs/saga.md).
    hold_max_seconds: float = Field(default=1200, gt=0)
    sweep_interval_seconds: float = Field(default=15, gt=0)
    sweep_batch_size: int = Field(default=200, ge=1)
    hold_rate_limit_per_minute: int = Field(default=5, ge=1)
    max_seats_per_hold: int = Field(default=8, ge=1)
    max_seats_held_per_customer_showtime: int = Field(default=8, ge=1)
    seat_gate_enabled: bool = True
    redis_socket_timeout_seconds: float = Field(default=0.2, gt=0)
    # After a Redis failure Redis is skipped this long: a dead Redis costs one timeout, not one per request.
    redis_retry_after_seconds: float = Field(default=1.0, ge=0)
    idempotency_retention_hours: float = Field(default=24, ge=24)
    http_host: str = "127.0.0.1"
    http_port: int = 8001

    # The seat map (issue 14): each API process keeps the maps it serves in memory, moved by the seat changes
    # Postgres notifies (adapters/seat_map_feed.py); README "The seat map".
    seat_map_showtimes: int = Field(default=2000, ge=1)  # kept per process; the least read (and not streamed) go
    seat_map_missing_seconds: float = Field(default=1.0, ge=0)  # an unknown showtime: 404 from memory this long
    seat_map_stale_seconds: float = Field(default=2.0, gt=0)  # maps served this long without the feed (contract: 2 s)
    seat_map_stream_buffer_bytes: int = Field(default=256 * 1024, ge=4096)  # a stream further behind is dropped
    seat_map_stream_send_timeout_seconds: float = Field(default=30.0, gt=0)  # a write stuck this long is dropped
    seat_map_heartbeat_seconds: float = Field(default=15.0, gt=0)
    seat_map_stream_flush_seconds: float = Field(default=0.1, ge=0)  # changes this close go to a stream in one write
    seat_map_max_streams: int = Field(default=20000, ge=1)  # per process; past it a new stream gets 503
    # The customer page's checkout: payment-service's public base URL ("" = the page's own origin, behind an
    # ingress that routes /holds/{id}/checkout there); payment-service must allow the page's origin (CORS).
    payment_public_url: str = ""

    # The per-address limit and the waiting room (service_layer/waiting_room.py; README, "Waiting room").
    hold_rate_limit_per_ip_per_minute: int = Field(default=120, ge=1)  # holds and queue joins per address
    # Peers whose X-Forwarded-For is believed: addresses or CIDRs, comma-separated (none by default).
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)
    admission_token_ttl_seconds: float = Field(default=180, gt=0)  # an admitted customer's slot, and his token
    waiting_room_step_seconds: float = Field(default=0.25, gt=0)  # how often a room admits (cluster-wide)
    # A queued customer who has not polled for this long is dropped when his turn comes; an admitted one who
    # has not come for his token in this time loses the slot.
    waiting_room_abandon_seconds: float = Field(default=30, gt=0)
    waiting_room_cache_seconds: float = Field(default=1.0, ge=0)  # how old a process's view of a room may be
    waiting_room_redis_timeout_seconds: float = Field(default=1.0, gt=0)  # the queue's Redis calls (holds: 0.2)

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxies(cls, value: object) -> object:
        if isinstance(value, str):
            value = [p.strip() for p in value.split(",") if p.strip()]
        for proxy in value if isinstance(value, list) else []:
            ipaddress.ip_network(proxy, strict=False)  # ValueError: refused at start, not at the first request
        return value
