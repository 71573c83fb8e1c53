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
    seat_map_cache_seconds: float = Field(default=2.0, gt=0)
    redis_socket_timeout_seconds: float = Field(default=0.2, gt=0)
    # After a Redis failure Redis is skipped this long: a dead Redis costs one timeout, not one per request.
    redis_retry_after_seconds: float = Field(default=1.0, ge=0)
    idempotency_retention_hours: float = Field(default=24, ge=24)
    http_host: str = "127.0.0.1"
    http_port: int = 8001
