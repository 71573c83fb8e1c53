"""voucher-service settings (DESIGN.md section 5); nothing else reads the environment."""

from __future__ import annotations

from pydantic import AliasChoices, Field
from ticketing.settings import TokenSettings


class VoucherSettings(TokenSettings):
    service_name: str = "voucher-service"
    database_url: str = Field(
        default="postgresql://voucher_service@127.0.0.1:5432/ticketing",
        validation_alias=AliasChoices("VOUCHER_DATABASE_URL", "DATABASE_URL", "database_url"),
    )
    http_host: str = "127.0.0.1"
    http_port: int = 8003
    voucher_reservation_ttl_seconds: float = Field(default=900, gt=0)
    sweep_interval_seconds: float = Field(default=15, gt=0)
    reconcile_interval_seconds: float = Field(default=60, gt=0)
    sold_out_cache_seconds: float = Field(default=2.0, ge=0)
    voucher_cache_seconds: float = Field(default=5.0, ge=0)
    # Quotes per customer and minute (then 429): a quote tells whether a code is live.
    voucher_quote_rate_limit_per_minute: int = Field(default=30, ge=1)
    # The reservation expiry asks payment-service whether a use's payment ended (service_layer/expiry.py).
    payment_service_url: str = "http://127.0.0.1:8002"
    kafka_send_timeout_seconds: float = Field(default=5.0, gt=0)
    flash_linger_ms: int = Field(default=1, ge=0)
    # After Redis lost a gate: wait this long (>= the send timeout) before reading the end offset the
    # writer must reach; see service_layer/warmup.py. None = kafka_send_timeout_seconds.
    gate_recovery_fence_seconds: float | None = Field(default=None, ge=0)

    @property
    def writer_group(self) -> str:
        """Consumer group (and inbox name) of the voucher-reserved consumer that writes Postgres."""
        return f"{self.kafka_group_prefix}voucher-writer"

    @property
    def recovery_fence(self) -> float:
        fence = self.gate_recovery_fence_seconds
        return self.kafka_send_timeout_seconds if fence is None else fence
