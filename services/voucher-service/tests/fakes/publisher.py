"""Publisher: the VoucherReserved events sent, or a send refused or never acknowledged."""

from __future__ import annotations

from ticketing.events import VoucherReserved
from voucher_service.domain.errors import SendRefused
from voucher_service.service_layer.ports import (
    Publisher,
)


class FakePublisher(Publisher):
    """fail: None (acknowledged), "refused" (surely never left) or "unknown" (no ack: it may still land)."""

    def __init__(self, fail: str | None = None) -> None:
        self.sent: list[VoucherReserved] = []
        self.fail = fail

    async def publish(self, event: VoucherReserved) -> None:
        if self.fail == "refused":
            raise SendRefused("the producer refused the message")
        if self.fail == "unknown":
            raise TimeoutError("broker did not acknowledge")
        self.sent.append(event)
