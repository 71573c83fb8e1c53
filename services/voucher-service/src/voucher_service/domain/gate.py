"""The flash-sale gate's answers and entries (the Redis Lua scripts' vocabulary), pure."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class GateResult(enum.Enum):
    """Answers of the flash-sale gate (the Lua reserve script)."""

    RESERVED = 1
    DUPLICATE = 0
    PENDING = 2  # a retry while no VoucherReserved of the order is acknowledged yet: send it again
    OUT_OF_STOCK = -1
    ALREADY_USED = -2
    NOT_LOADED = -3
    ORDER_TAKEN = -4


@dataclass(frozen=True)
class GateOrder:
    """One entry of the gate's orders hash: state 'P' (reserved, VoucherReserved not acknowledged), 'S' (the
    same, and a retry sent the message again), 'R' (reserved, acknowledged) or 'X' (released)."""

    order_id: str
    state: str
    customer_id: int
    order_amount: int
    reserved_at: int  # epoch seconds; 0 when adopted from Postgres

    @property
    def held(self) -> bool:
        """The entry takes a use (pending or sent)."""
        return self.state in ("P", "S", "R")

    @property
    def pending(self) -> bool:
        """Its VoucherReserved may or may not be in Kafka: not yet a use anyone was promised."""
        return self.state in ("P", "S")

    @classmethod
    def parse(cls, order_id: str, raw: str) -> GateOrder:
        state, cust, amount, epoch = raw.split("|")
        return cls(order_id, state, int(cust), int(amount), int(epoch))
