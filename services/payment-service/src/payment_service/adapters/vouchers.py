"""voucher-service's reservation API, with a service token: reserve and release, orderId = paymentId."""

from __future__ import annotations

import logging
import uuid
from urllib.parse import quote

from ticketing.logs import log_action

from payment_service.adapters.http import ServiceClient
from payment_service.domain.errors import DependencyUnavailable, VoucherRejected
from payment_service.service_layer.ports import Vouchers

logger = logging.getLogger(__name__)
_PASSED_ON = {404, 409, 422}  # the contract's errors, handed to the customer as they are


class HttpVouchers(Vouchers):
    def __init__(self, client: ServiceClient) -> None:
        self.client = client

    async def reserve(self, code: str, *, customer_id: int, order_id: uuid.UUID, order_amount: int) -> int:
        body = {"customerId": customer_id, "orderId": str(order_id), "orderAmount": order_amount}
        path = f"/vouchers/{quote(code, safe='')}/reservations"
        response = await self.client.request("POST", path, json=body)
        if response.status_code in (200, 201):
            return int(response.json()["discountAmount"])
        if response.status_code in _PASSED_ON:
            error = _error_body(response.json() if response.content else {})
            return _raise(response.status_code, error)
        raise DependencyUnavailable(f"voucher-service answered {response.status_code}")

    async def release(self, code: str, order_id: uuid.UUID) -> None:
        response = await self.client.request("DELETE", f"/vouchers/{quote(code, safe='')}/reservations/{order_id}")
        # 204 released, 404 nothing reserved under this order (or released before): both are what we want.
        # 409: the use is confirmed (a booking used it); it is not ours to give back.
        if response.status_code == 409:
            log_action(logger, "voucher.release_refused", response.text[:200], level=logging.WARNING,
                       code=code, order_id=str(order_id))
        elif response.status_code not in (200, 204, 404):
            raise DependencyUnavailable(f"voucher-service answered {response.status_code} to a release")


def _error_body(body: object) -> dict[str, str]:
    if isinstance(body, dict):
        return {"error": str(body.get("error", "VALIDATION_ERROR")), "message": str(body.get("message", ""))}
    return {"error": "VALIDATION_ERROR", "message": "voucher rejected"}


def _raise(status: int, error: dict[str, str]) -> int:
    raise VoucherRejected(status, error["error"], error["message"] or "voucher rejected")
