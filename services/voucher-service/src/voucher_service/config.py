"""voucher-service settings: the only place that reads the environment."""

from __future__ import annotations

from pydantic import AliasChoices, Field
from ticketing.settings import TokenSettings


class VoucherSettings(TokenSettings):
    """Each setting's docstring is its meaning in docs/configuration.md (generated from this class)."""

    service_name: str = "voucher-service"
    """The name in logs, metrics and traces."""
    database_url: str = Field(
        default="postgresql://voucher_service@127.0.0.1:5432/ticketing",
        validation_alias=AliasChoices("VOUCHER_DATABASE_URL", "DATABASE_URL", "database_url"),
    )
    """voucher-service's database (its role sees only its own schema, `voucher`)."""
    http_host: str = "127.0.0.1"
    """The address the API listens on."""
    http_port: int = 8003
    """The API's port."""
    voucher_reservation_ttl_seconds: float = Field(default=900, gt=0)
    """A voucher use reserved this long without its payment settling is released, if payment-service says the
    payment failed, expired, was refunded or is unknown."""
    sweep_interval_seconds: float = Field(default=15, gt=0)
    """How often the reservation expiry runs."""
    reconcile_interval_seconds: float = Field(default=60, gt=0)
    """How often each flash voucher's Redis gate is reconciled with PostgreSQL."""
    sold_out_cache_seconds: float = Field(default=2.0, ge=0)
    """How long a process remembers that a voucher has no use left: it answers OUT_OF_STOCK without asking
    Redis (flash mode) or the voucher's row (normal mode); a use given back in another process is offered
    again once this lapses."""
    voucher_cache_seconds: float = Field(default=5.0, ge=0)
    """How long a process keeps a voucher's terms (amount, limits, dates) it read; they never change."""
    voucher_quote_rate_limit_per_minute: int = Field(default=30, ge=1)
    """Quotes one customer may ask for per minute (then 429): a quote tells whether a code is live."""
    payment_service_url: str = "http://127.0.0.1:8002"
    """payment-service, asked by the reservation expiry whether a use's payment ended."""
    kafka_send_timeout_seconds: float = Field(default=5.0, gt=0)
    """How long a flash reservation waits for Kafka to acknowledge its VoucherReserved; past it the request
    fails, and a use the message did not carry stays reserved in Redis only (undersold, never oversold) until
    the reconciliation gives it back."""
    flash_linger_ms: int = Field(default=0, ge=0)
    """How long the flash producer waits before it sends a batch of VoucherReserved messages, added to every
    flash request's wait. 0: none; the batches form anyway, one per voucher of the reservations the gate
    answered together, and, while one is sent, of all that come meanwhile (one request in flight to a broker)."""
    gate_recovery_fence_seconds: float | None = Field(default=None, ge=0)
    """After Redis lost a gate: wait this long (at least the send timeout) before reading the end offset the
    writer must reach to rebuild it; unset: KAFKA_SEND_TIMEOUT_SECONDS."""

    @property
    def writer_group(self) -> str:
        """Consumer group (and inbox name) of the voucher-reserved consumer that writes Postgres."""
        return f"{self.kafka_group_prefix}voucher-writer"

    @property
    def recovery_fence(self) -> float:
        fence = self.gate_recovery_fence_seconds
        return self.kafka_send_timeout_seconds if fence is None else fence
