"""Loyalty points: whole points per amount paid, rounded down (a refund does not take them back here)."""

from __future__ import annotations


def points_for(amount_cents: int, cents_per_point: int = 100) -> int:
    return max(amount_cents, 0) // cents_per_point
