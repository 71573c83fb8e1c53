"""A payment-service API whose Stripe adapter kills the process right after the provider created a
session, before the database learns about it (scenario R6's kind of crash, docs/reliability.md, for the checkout).

Test-only: started by test_payment_journeys.py with `uvicorn --app-dir <this folder> --factory
crashing_gateway:get_application`; production code carries no fault hook.
"""

from __future__ import annotations

import os

from fastapi import FastAPI
from payment_service.adapters.stripe_provider import StripeGateway
from payment_service.config import Settings
from payment_service.domain.model import Payment
from payment_service.entrypoints.api.app import get_application as real_application
from payment_service.service_layer.ports import GatewaySession

CRASH_EXIT_CODE = 87


class CrashingGateway(StripeGateway):
    async def create_session(self, payment: Payment) -> GatewaySession:
        await super().create_session(payment)
        os._exit(CRASH_EXIT_CODE)


def get_application() -> FastAPI:
    settings = Settings()
    return real_application(settings, gateway=CrashingGateway(settings, timeout=5))
