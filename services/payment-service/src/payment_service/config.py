"""payment-service settings: the only place that reads the environment."""

from __future__ import annotations

from pydantic import AliasChoices, Field
from ticketing.settings import DEV_DEFAULT_SECRET, ServiceSettings

THREE_DAYS = 3 * 86400


class Settings(ServiceSettings):
    service_name: str = "payment-service"
    database_url: str = Field(default="postgresql://postgres@127.0.0.1:5432/ticketing",
                              validation_alias=AliasChoices("PAYMENT_DATABASE_URL", "DATABASE_URL"))
    gateway_webhook_secret: str = DEV_DEFAULT_SECRET
    hold_service_url: str = "http://127.0.0.1:8001"
    voucher_service_url: str = "http://127.0.0.1:8003"
    gateway_url: str = "http://127.0.0.1:8010"
    public_callback_url: str = "http://127.0.0.1:8002/payments/callback"
    payment_session_ttl_seconds: int = Field(default=480, ge=1)
    # Paying in time always books (docs/saga.md): a session ends at min(now + PAYMENT_SESSION_TTL_SECONDS, the
    # hold's creation + HOLD_MAX_SECONDS - PAYMENT_CONFIRM_GRACE_SECONDS) and the hold is first extended to
    # the session's end + the grace; less than PAYMENT_MIN_SESSION_SECONDS left: no session (hold again).
    hold_max_seconds: float = Field(default=1200, gt=0)
    payment_confirm_grace_seconds: float = Field(default=120, ge=0)
    payment_min_session_seconds: float = Field(default=60, ge=0)
    max_checkouts_per_hold: int = Field(default=3, ge=1)  # payment attempts of one hold (then CHECKOUT_LIMIT)
    reconcile_interval_seconds: float = Field(default=60, gt=0)
    reconcile_after_seconds: int = Field(default=900, ge=0)
    callback_tolerance_seconds: int = Field(default=300, ge=1)
    # Gateways retry for days: processed callback ids are kept at least 3 days (RELIABILITY.md S1/R8).
    callback_event_retention_seconds: int = Field(default=7 * 86400, ge=THREE_DAYS)
    # Stripe keeps idempotency keys 24 h; we keep them at least that long.
    idempotency_retention_seconds: int = Field(default=2 * 86400, ge=86400)
    housekeeping_interval_seconds: float = Field(default=3600, gt=0)
    # Refunds the gateway refused or could not take are retried after first, 2 x first, ... up to max s;
    # money due back for longer than refund_alert_seconds (or paid that long ago and neither booked nor
    # due back) is reported to operators (metric payment_money_unresolved, log action=money.unresolved).
    refund_interval_seconds: float = Field(default=1.0, gt=0)
    refund_retry_first_seconds: float = Field(default=2.0, gt=0)
    refund_retry_max_seconds: float = Field(default=300.0, gt=0)
    refund_alert_seconds: float = Field(default=900.0, gt=0)

    # Web pages of other origins that may call this API from a browser (CORS), comma-separated: hold-service's
    # seat-map page starts its checkout here (dev: http://127.0.0.1:8001). None by default: behind one
    # ingress the page and this API share an origin.
    cors_allowed_origins: str = ""

    def secrets(self) -> dict[str, str]:
        return {**super().secrets(), "GATEWAY_WEBHOOK_SECRET": self.gateway_webhook_secret}
