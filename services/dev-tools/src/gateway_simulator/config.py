"""Settings of the gateway simulator (Stripe-shaped; a dev/test tool, never deployed to production)."""

from __future__ import annotations

from pydantic import Field
from ticketing.settings import DEV_DEFAULT_SECRET, ServiceSettings


class SimulatorSettings(ServiceSettings):
    """Each setting's docstring is its meaning in docs/configuration.md (generated from this class)."""

    service_name: str = "gateway-simulator"
    """The name in logs and metrics."""
    host: str = "127.0.0.1"
    """The address the simulator listens on."""
    port: int = Field(default=8010, validation_alias="GATEWAY_SIMULATOR_PORT")
    """The simulator's port."""
    public_url: str = Field(default="http://127.0.0.1:8010", validation_alias="GATEWAY_PUBLIC_URL")
    """The simulator as a customer's browser reaches it (the hosted pay page's links)."""
    stripe_webhook_secret: str = DEV_DEFAULT_SECRET
    """The webhook endpoint's signing secret events are signed with (Stripe-Signature; payment-service checks
    them with the same; a secret)."""
    stripe_api_key: str = DEV_DEFAULT_SECRET
    """The merchant's secret API key: /v1 and the merchant's test controls answer 401 without it
    (Authorization: Bearer <key>; a secret)."""
    sim_webhook_url: str = "http://127.0.0.1:8002/payments/callback"
    """The merchant's webhook endpoint, where every event is sent (payment-service's POST /payments/callback
    as the simulator reaches it), as an endpoint registered at Stripe."""
    callback_max_attempts: int = Field(default=8, ge=1)
    """Deliveries of one event before the simulator gives up (real gateways retry non-2xx for days; this
    keeps the shape, shorter)."""
    callback_backoff_initial: float = Field(default=0.5, gt=0)
    """Seconds before the second delivery of a callback; doubling after each."""
    callback_backoff_max: float = Field(default=30.0, gt=0)
    """The longest wait between two deliveries of a callback, in seconds."""
    callback_timeout_seconds: float = Field(default=5.0, gt=0)
    """How long one callback delivery may take."""

    def secrets(self) -> dict[str, str]:
        return {**super().secrets(), "STRIPE_WEBHOOK_SECRET": self.stripe_webhook_secret,
                "STRIPE_API_KEY": self.stripe_api_key}
