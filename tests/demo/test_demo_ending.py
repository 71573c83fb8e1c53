"""The sale's sold-out decision, shared by the demo's processes (ending.py): a watcher whose read overlaps a
cancellation does not end the sale, and a customer who would cancel once it ended keeps his booking."""

from __future__ import annotations

import multiprocessing as mp
import random
from pathlib import Path

import httpx
import pytest

from .cancellers import book_then_cancel
from .ending import SaleEnd
from .sale import SaleConfig, read_seats
from .test_demo_hall import StandInShop, customer_at


def test_a_read_that_overlaps_a_cancellation_does_not_end_the_sale() -> None:
    end = SaleEnd()
    before = end.mark()
    assert end.begin_cancel()
    assert not end.settle(before, every_seat_booked=True)  # in flight now
    end.end_cancel()
    assert not end.settle(before, every_seat_booked=True)  # ended during the read: its seats may be free
    assert not end.settle(end.mark(), every_seat_booked=False)
    assert end.settle(end.mark(), every_seat_booked=True)
    assert not end.begin_cancel()  # sold out: nobody would buy his seats
    assert end.settle(end.mark(), every_seat_booked=False)  # once sold out, it stays so


def _cancel_in_another_process(end: SaleEnd, began: object) -> None:
    assert end.begin_cancel()
    began.set()  # type: ignore[attr-defined]


def test_the_decision_is_shared_by_the_customer_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))  # the spawned process imports this module
    end = SaleEnd()
    ctx = mp.get_context("spawn")
    began = ctx.Event()
    before = end.mark()
    worker = ctx.Process(target=_cancel_in_another_process, args=(end, began))
    worker.start()
    worker.join(timeout=60)
    assert worker.exitcode == 0 and began.is_set()
    assert not end.settle(before, every_seat_booked=True)
    end.end_cancel()
    assert end.settle(end.mark(), every_seat_booked=True)


async def test_the_watcher_does_not_call_the_sale_sold_out_while_a_booking_is_cancelled() -> None:
    shop = StandInShop(unsold=0)
    async with httpx.AsyncClient(transport=httpx.MockTransport(shop)) as client:
        c = customer_at(client)
        sale = c.sale
        sale.catalogue.showtimes = {43: ["A1", "A2", "A3"]}  # every seat of it BOOKED
        sale.cfg, sale.seats = SaleConfig(showtimes=1, seats=3), {}
        assert sale.end.begin_cancel()
        await read_seats(sale, client, rooms=False)
        assert sale.booked() == sale.cfg.capacity and not sale.sold_out.is_set()
        sale.end.end_cancel()
        await read_seats(sale, client, rooms=False)
        assert sale.sold_out.is_set()


async def test_a_customer_keeps_his_booking_once_the_sale_sold_out() -> None:
    shop = StandInShop(unsold=3, elsewhere=3)
    async with httpx.AsyncClient(transport=httpx.MockTransport(shop)) as client:
        c = customer_at(client)
        assert c.sale.end.settle(c.sale.end.mark(), every_seat_booked=True)
        j = c.shop.history.journey(c.id, "cancels booking")
        await book_then_cancel(c, j, random.Random(3))
    assert shop.cancelled == [] and "kept_booking_sold_out" in j.notes
    assert [op["f"] for op in c.shop.history.ops if op["type"] == "ok"][-1] == "hold_status"  # no look, no cancel
