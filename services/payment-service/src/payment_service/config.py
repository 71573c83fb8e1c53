"""payment-service settings: the only place that reads the environment."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field
from ticketing.settings import DEV_DEFAULT_SECRET, TokenSettings

THREE_DAYS = 3 * 86400


class Settings(TokenSettings):
    """Each setting's docstring is its meaning in docs/configuration.md (generated from this class)."""

    service_name: str = "payment-service"
    """The name in logs, metrics and traces."""
    database_url: str = Field(default="postgresql://postgres@127.0.0.1:5432/ticketing",
                              validation_alias=AliasChoices("PAYMENT_DATABASE_URL", "DATABASE_URL"))
    """payment-service's database (its role sees only its own schema, `payment`)."""
    payment_provider: Literal["stripe"] = "stripe"
    """The payment provider's adapter: `stripe` (Stripe Checkout, through the official SDK; docs/payments.md)."""
    stripe_api_key: str = DEV_DEFAULT_SECRET
    """The merchant's secret API key at Stripe (`sk_test_...` or `sk_live_...`; a secret)."""
    stripe_webhook_secret: str = DEV_DEFAULT_SECRET
    """The signing secret of Stripe's webhook endpoint (`whsec_...`): Stripe-Signature, HMAC-SHA256; a
    secret."""
    stripe_api_base: str | None = None
    """Where Stripe's API is reached: unset in production (Stripe itself); the simulator under `make up`."""
    currency: str = Field(default="EUR", pattern=r"^[A-Z]{3}$")
    """The currency of the amounts charged (ISO 4217, upper case); carried by the money events."""
    checkout_return_url: str = "http://127.0.0.1:8001/pages/showtimes/{showtimeId}"
    """Where the provider's hosted page sends the customer back, paid or not (`{showtimeId}` is replaced):
    the seat-map page."""
    hold_service_url: str = "http://127.0.0.1:8001"
    """hold-service, asked for a hold before its checkout."""
    voucher_service_url: str = "http://127.0.0.1:8003"
    """voucher-service, where a checkout reserves its voucher use."""
    payment_session_ttl_seconds: int = Field(default=480, ge=1)
    """How long a checkout's session at the provider stays open for the customer to pay (at most: see
    HOLD_MAX_SECONDS)."""
    hold_max_seconds: float = Field(default=1200, gt=0)
    """hold-service's HOLD_MAX_SECONDS: a session ends at min(now + PAYMENT_SESSION_TTL_SECONDS, the hold's
    creation + HOLD_MAX_SECONDS - PAYMENT_CONFIRM_GRACE_SECONDS), and the hold is first extended to the
    session's end + the grace."""
    payment_confirm_grace_seconds: float = Field(default=120, ge=0)
    """How late the events that carry a payment accepted in time may be applied and still book it: the hold
    outlives its payment session by this much."""
    payment_min_session_seconds: float = Field(default=60, ge=0)
    """A checkout that would leave the customer less than this to pay gets 409 HOLD_NOT_ACTIVE (hold again)."""
    max_checkouts_per_hold: int = Field(default=3, ge=1)
    """Payment attempts of one hold (after declines); then 409 CHECKOUT_LIMIT."""
    reconcile_interval_seconds: float = Field(default=60, gt=0)
    """How often the reconciler asks the provider about payments still PENDING."""
    reconcile_after_seconds: int = Field(default=900, ge=0)
    """A PENDING payment this old is settled from the provider's session state (its callback is late or
    lost)."""
    callback_tolerance_seconds: int = Field(default=300, ge=1)
    """How far a callback's signed timestamp may be from now, either way; further: 401."""
    callback_event_retention_seconds: int = Field(default=7 * 86400, ge=THREE_DAYS)
    """How long processed callback ids are kept, so a repeat is recognised; gateways retry for days, so at
    least three."""
    idempotency_retention_seconds: int = Field(default=2 * 86400, ge=86400)
    """How long a checkout's Idempotency-Key and its answer are kept (at least a day)."""
    housekeeping_interval_seconds: float = Field(default=3600, gt=0)
    """How often old callback ids and idempotency keys are deleted."""
    refund_interval_seconds: float = Field(default=1.0, gt=0)
    """How often refunds due are looked for and sent to the provider."""
    refund_retry_first_seconds: float = Field(default=2.0, gt=0)
    """A refund the provider refused or could not take is tried again after this, then twice as long each
    time."""
    refund_retry_max_seconds: float = Field(default=300.0, gt=0)
    """The longest wait between two tries of a refund."""
    refund_alert_seconds: float = Field(default=900.0, gt=0)
    """Money due back (or paid and neither booked nor due back) for this long is reported to operators
    (ticketing_payment_money_unresolved, log action=money.unresolved)."""
    cors_allowed_origins: str = ""
    """Web pages of other origins that may call this API from a browser, comma-separated (dev: the seat-map
    page at http://127.0.0.1:8001); none: behind one ingress the page and this API share an origin."""

    def secrets(self) -> dict[str, str]:
        return {**super().secrets(), "STRIPE_WEBHOOK_SECRET": self.stripe_webhook_secret,
                "STRIPE_API_KEY": self.stripe_api_key}
