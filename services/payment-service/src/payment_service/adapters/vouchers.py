"""voucher-service's reservation API (`POST /vouchers/{code}/reservations`, orderId = bookingId)."""

from __future__ import annotations

import uuid
from urllib.parse import quote

from payment_service.adapters.http import ServiceClient
from payment_service.domain.errors import DependencyUnavailable, VoucherRejected
from payment_service.service_layer.ports import Vouchers

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


def _error_body(body: object) -> dict[str, str]:
    if isinstance(body, dict):
        return {"error": str(body.get("error", "VALIDATION_ERROR")), "message": str(body.get("message", ""))}
    return {"error": "VALIDATION_ERROR", "message": "voucher rejected"}


def _raise(status: int, error: dict[str, str]) -> int:
    raise VoucherRejected(status, error["error"], error["message"] or "voucher rejected")
