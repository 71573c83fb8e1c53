"""Settings of the gateway simulator (a dev/test tool, never deployed to production)."""

from __future__ import annotations

from pydantic import Field
from ticketing.settings import DEV_DEFAULT_SECRET, ServiceSettings


class SimulatorSettings(ServiceSettings):
    service_name: str = "gateway-simulator"
    host: str = "127.0.0.1"
    port: int = Field(default=8010, validation_alias="GATEWAY_SIMULATOR_PORT")
    public_url: str = Field(default="http://127.0.0.1:8010", validation_alias="GATEWAY_PUBLIC_URL")
    gateway_webhook_secret: str = DEV_DEFAULT_SECRET
    # The merchant's API key: /v1 and the session list answer 401 without it (Authorization: Bearer <key>).
    gateway_api_key: str = DEV_DEFAULT_SECRET
    # Real gateways retry non-2xx deliveries for days; the simulator keeps the same shape, shorter.
    callback_max_attempts: int = Field(default=8, ge=1)
    callback_backoff_initial: float = Field(default=0.5, gt=0)
    callback_backoff_max: float = Field(default=30.0, gt=0)
    callback_timeout_seconds: float = Field(default=5.0, gt=0)

    def secrets(self) -> dict[str, str]:
        return {**super().secrets(), "GATEWAY_WEBHOOK_SECRET": self.gateway_webhook_secret,
                "GATEWAY_API_KEY": self.gateway_api_key}
