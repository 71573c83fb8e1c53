"""hold-service settings: the only place that reads the environment."""

from __future__ import annotations

from pydantic import AliasChoices, Field
from ticketing.settings import ServiceSettings


class HoldSettings(ServiceSettings):
    service_name: str = "hold-service"
    database_url: str = Field(
        default="postgresql://postgres@127.0.0.1:5432/ticketing",
        validation_alias=AliasChoices("HOLD_DATABASE_URL", "DATABASE_URL"),
    )
    hold_ttl_seconds: float = Field(default=600, gt=0)
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
