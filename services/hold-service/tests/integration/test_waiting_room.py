"""The waiting room's API against real Redis and Postgres: the operator's room, tickets, admission tokens,
slots ending (paid, cancelled, lapsed, abandoned), inventory (sold out, seats coming back), per-address limits."""

from __future__ import annotations

import asyncio
import random
import time

import pytest
from hold_service.service_layer.lifecycle import sweep_expired

pytestmark = pytest.mark.integration


def addresses() -> str:
    """A /24 of shared address space (RFC 6598) of this run's own: the limits' counts outlive a test."""
    return f"100.{random.randint(64, 127)}.{random.randint(0, 255)}"


async def test_operator_turns_a_room_on_persisted_and_readable(start, db, h, rooms) -> None:
    async with start() as svc:
        sid = await svc.showtime()
        admin = h.auth(1, "admin")
        put = await rooms.configure(svc, sid, 3, opens_at="2030-01-01T19:00:00Z")
        assert put.json() == {
            "showtimeId": sid, "enabled": True, "mode": "on", "activeLimit": 3, "opensAt": "2030-01-01T19:00:00Z",
            "openAtArrivalsPerMinute": 1000, "openAtActive": 400, "changedReason": "OPERATOR",
            "changedAt": put.json()["changedAt"], "opened": None, "queueLength": None, "active": None,
            "admittedTotal": None, "admissionRatePerMinute": None, "soldOut": None, "seatsAvailable": None,
            "seatsHeld": None, "pausedUntil": None}
        got = await svc.client.get(f"/admin/showtimes/{sid}/waiting-room", headers=admin)
        assert got.status_code == 200 and got.json()["activeLimit"] == 3
        public = await svc.client.get(f"/showtimes/{sid}/waiting-room", headers=h.auth(5))
        assert public.json() == {"showtimeId": sid, "enabled": True, "opensAt": "2030-01-01T19:00:00Z",
                                 "soldOut": False}
        for body in ({"enabled": True, "activeLimit": 0}, {"enabled": True}, {"enabled": True, "activeLimit": 2,
                     "opensAt": "2030-01-01T19:00:00"}, {"enabled": True, "activeLimit": 2, "x": 1},
                     {"enabled": True, "activeLimit": 2, "opensAt": "0001-01-01T00:00:06+03:00"}):  # year 0 in UTC
            bad = await svc.client.put(f"/admin/showtimes/{sid}/waiting-room", json=body, headers=admin)
            assert bad.status_code == 422 and bad.json()["error"] == "VALIDATION_ERROR", body
        as_customer = await svc.client.put(f"/admin/showtimes/{sid}/waiting-room", headers=h.auth(5),
                                           json={"enabled": True, "activeLimit": 1})
        assert as_customer.status_code == 403
        unknown = await svc.client.put(f"/admin/showtimes/{h.new_id()}/waiting-room", headers=admin,
                                       json={"enabled": True, "activeLimit": 1})
        assert unknown.status_code == 404 and unknown.json()["error"] == "NOT_FOUND"
        none = await svc.client.get(f"/showtimes/{h.new_id()}/waiting-room", headers=h.auth(5))
        assert none.json()["enabled"] is False
    row = await db.fetchrow("SELECT enabled, active_limit, opens_at FROM waiting_room WHERE showtime_id = $1", sid)
    assert row["enabled"] and row["active_limit"] == 3 and row["opens_at"].year == 2030


async def test_joining_is_idempotent_and_a_ticket_is_its_owners_only(start, h, rooms) -> None:
    async with start() as svc:
        sid = await svc.showtime()
        assert (await rooms.join(svc.client, sid, h.new_id())).status_code == 404  # no room yet
        await rooms.configure(svc, sid, 1)
        a, b = h.new_id(), h.new_id()
        first, again = await rooms.join(svc.client, sid, a), await rooms.join(svc.client, sid, a)
        assert first.status_code == again.status_code == 202
        assert again.json() == first.json() == {"ticket": first.json()["ticket"], "position": 1, "soldOut": False,
                                                "opensAt": None}
        second = (await rooms.join(svc.client, sid, b)).json()
        assert second["position"] == 2 and second["ticket"] != first.json()["ticket"]
        stolen = await rooms.poll(svc.client, first.json()["ticket"], b)
        garbage = await rooms.poll(svc.client, "bm90LWEtdGlja2V0.AAAAAAAAAAAAAAAAAAAAAA", b)
        assert stolen.status_code == garbage.status_code == 404 and stolen.json() == garbage.json()  # no oracle
        mine = await rooms.poll(svc.client, first.json()["ticket"], a)  # takes the first step: admitted
        assert mine.json()["admitted"] is True and mine.json()["admissionToken"]
        waiting = (await rooms.poll(svc.client, second["ticket"], b)).json()
        assert waiting["admitted"] is False and waiting["position"] == 1 and waiting["estimatedWaitSeconds"] >= 1
        assert (await rooms.join(svc.client, sid, a)).json()["position"] == 0  # admitted: same ticket, in


async def test_holds_need_an_admission_token_while_the_room_is_on(start, h, rooms) -> None:
    async with start(admission_token_ttl_seconds=2) as svc:
        sid, other_sid = await svc.showtime(), await svc.showtime()
        await rooms.configure(svc, sid, 5)
        await rooms.configure(svc, other_sid, 5)
        a, b = h.new_id(), h.new_id()
        token = await rooms.admitted(svc.client, (await rooms.join(svc.client, sid, a)).json()["ticket"], a)
        refused = [await svc.hold(sid, ["F1"], a),  # no token
                   await svc.hold(sid, ["F1"], b, **{"X-Admission-Token": token}),  # another customer's
                   await svc.hold(other_sid, ["F1"], a, **{"X-Admission-Token": token}),  # another showtime
                   await svc.hold(sid, ["F1"], a, **{"X-Admission-Token": token[:-4] + "AAAA"})]  # forged
        for r in refused:
            assert r.status_code == 403 and r.json()["error"] == "ADMISSION_REQUIRED" and r.json()["message"]
        assert (await svc.hold(sid, ["F1"], a, **{"X-Admission-Token": token})).status_code == 201
        await asyncio.sleep(2.1)  # the token (and the slot) lapsed
        late = await svc.hold(sid, ["F2"], a, **{"X-Admission-Token": token})
        assert late.status_code == 403 and late.json()["error"] == "ADMISSION_REQUIRED"
        await rooms.configure(svc, sid, 5, enabled=False)  # the room off: no token needed
        assert (await svc.hold(sid, ["F3"], b)).status_code == 201


async def test_paying_and_cancelling_end_the_slot_for_the_next_in_line(start, h, rooms) -> None:
    async with start(waiting_room_step_seconds=0.05) as svc:
        sid = await svc.showtime()
        await rooms.configure(svc, sid, 1)
        a, b, c = h.new_id(), h.new_id(), h.new_id()
        tickets = {x: (await rooms.join(svc.client, sid, x)).json()["ticket"] for x in (a, b, c)}
        token_a = await rooms.admitted(svc.client, tickets[a], a)
        assert not (await rooms.poll(svc.client, tickets[b], b)).json()["admitted"]  # one at a time
        hold = (await svc.hold(sid, ["F1"], a, **{"X-Admission-Token": token_a})).json()
        assert (await svc.client.delete(f"/holds/{hold['holdId']}", headers=h.auth(a))).status_code == 204
        token_b = await rooms.admitted(svc.client, tickets[b], b)  # a cancelled: b's turn
        stale = await svc.hold(sid, ["F2"], a, **{"X-Admission-Token": token_a})
        assert stale.status_code == 403 and stale.json()["error"] == "ADMISSION_REQUIRED"
        for _ in range(2):  # his place ended, and it stays ended (no comeback at his old place)
            assert (await rooms.poll(svc.client, tickets[a], a)).status_code == 404
        held = (await svc.hold(sid, ["F2"], b, **{"X-Admission-Token": token_b})).json()
        await rooms.pay(svc, held, b)
        await rooms.admitted(svc.client, tickets[c], c)  # b paid: c's turn
        assert (await svc.hold(sid, ["F3"], b, **{"X-Admission-Token": token_b})).status_code == 403


async def test_a_hold_that_expires_unpaid_ends_the_slot_for_the_next_in_line(start, h, rooms) -> None:
    """The customer held, then walked away: when his hold's SeatsReleased{EXPIRED} is applied his turn is over,
    long before his token would lapse (180 s by default), and the seat goes to the next customer in line."""
    async with start(waiting_room_step_seconds=0.05, hold_ttl_seconds=1) as svc:
        sid = await svc.showtime({"A": 1})
        await rooms.configure(svc, sid, 1)
        a, b = h.new_id(), h.new_id()
        tickets = {x: (await rooms.join(svc.client, sid, x)).json()["ticket"] for x in (a, b)}
        token_a = await rooms.admitted(svc.client, tickets[a], a)
        hold = (await svc.hold(sid, ["A1"], a, **{"X-Admission-Token": token_a})).json()
        await asyncio.sleep(1.1)
        assert await sweep_expired(svc.deps) >= 1  # A1 is AVAILABLE again (and any expired hold of other tests)
        for _ in range(5):
            assert not (await rooms.poll(svc.client, tickets[b], b)).json()["admitted"]
            await asyncio.sleep(0.1)
        await rooms.expire(svc, hold, a)
        await rooms.admitted(svc.client, tickets[b], b, timeout=5)  # a's hold ended unpaid: b's turn
        stale = await svc.hold(sid, ["A1"], a, **{"X-Admission-Token": token_a})
        assert stale.status_code == 403 and stale.json()["error"] == "ADMISSION_REQUIRED"


async def test_abandoned_entries_never_stall_the_queue(start, h, rooms) -> None:
    """Queued customers who stopped polling are dropped when their turn comes; an admitted one who never
    comes for his token loses the slot after the abandon time."""
    async with start(waiting_room_step_seconds=0.05, waiting_room_abandon_seconds=1) as svc:
        sid = await svc.showtime()
        await rooms.configure(svc, sid, 1)
        gone = [h.new_id() for _ in range(3)]
        gone_tickets = [(await rooms.join(svc.client, sid, x)).json()["ticket"] for x in gone]  # never polled
        live = h.new_id()
        ticket = (await rooms.join(svc.client, sid, live)).json()["ticket"]
        started = time.monotonic()
        await rooms.admitted(svc.client, ticket, live, timeout=10)
        # The first of `gone` got the slot (joined < 1 s before), never came for it: reclaimed after 1 s;
        # the other two are dropped at their turn, never admitted.
        assert time.monotonic() - started < 5
        overview = (await svc.client.get(f"/admin/showtimes/{sid}/waiting-room", headers=h.auth(1, "admin"))).json()
        assert overview["active"] == 1 and overview["queueLength"] == 0 and overview["admittedTotal"] == 2
        comeback = await rooms.poll(svc.client, gone_tickets[1], gone[1])
        assert comeback.status_code == 404  # dropped: he joins again, at the back


async def test_sold_out_reaches_every_queued_customer_within_a_second(start, h, rooms) -> None:
    async with start() as svc:  # the default step: every 0.25 s
        sid = await svc.showtime({"A": 2})
        await rooms.configure(svc, sid, 2)
        buyers, queued = [h.new_id(), h.new_id()], [h.new_id() for _ in range(20)]
        tickets = {x: (await rooms.join(svc.client, sid, x)).json()["ticket"] for x in buyers + queued}
        tokens = {x: await rooms.admitted(svc.client, tickets[x], x) for x in buyers}
        holds = [(await svc.hold(sid, [f"A{i}"], x, **{"X-Admission-Token": tokens[x]})).json()
                 for i, x in enumerate(buyers, 1)]
        told: dict[int, float] = {}
        last_seat_at: list[float] = []

        async def wait_in_line(x: int) -> None:
            while x not in told:
                r = (await rooms.poll(svc.client, tickets[x], x)).json()
                assert not r["admitted"]  # every seat is held: nobody else comes in
                if r["soldOut"]:
                    assert last_seat_at, "told sold out while seats were only held"
                    told[x] = time.monotonic()
                await asyncio.sleep(0.05)

        waiting = asyncio.gather(*(wait_in_line(x) for x in queued))
        await asyncio.sleep(0.6)  # seats held, not sold: the queue waits
        await rooms.pay(svc, holds[0], buyers[0])
        last_seat_at.append(time.monotonic())  # from just before the last seat is booked
        await rooms.pay(svc, holds[1], buyers[1])
        await asyncio.wait_for(waiting, 10)
        delays = sorted(t - last_seat_at[0] for t in told.values())
        print(f"\nsold out told to {len(delays)} queued customers: first after {delays[0]:.3f} s, last "
              f"after {delays[-1]:.3f} s")
        assert len(told) == len(queued) and delays[-1] < 1.0, delays


async def test_admission_resumes_when_held_seats_come_back(start, h, rooms) -> None:
    """Seats all held (not sold): nobody is admitted; the holds expire unpaid: admission resumes."""
    # Slots of 2 s (a busy machine took over 1 s between an admission and its hold), seats held 4 s.
    async with start(waiting_room_step_seconds=0.05, admission_token_ttl_seconds=2, hold_ttl_seconds=4) as svc:
        sid = await svc.showtime({"A": 2})
        await rooms.configure(svc, sid, 3)
        a, b, c = h.new_id(), h.new_id(), h.new_id()
        tickets = {x: (await rooms.join(svc.client, sid, x)).json()["ticket"] for x in (a, b)}
        tokens = {x: await rooms.admitted(svc.client, tickets[x], x) for x in (a, b)}
        held_at = time.monotonic()
        for x, seat in ((a, "A1"), (b, "A2")):
            assert (await svc.hold(sid, [seat], x, **{"X-Admission-Token": tokens[x]})).status_code == 201
        ticket_c = (await rooms.join(svc.client, sid, c)).json()["ticket"]
        while time.monotonic() - held_at < 3.5:  # slots lapse at 2 s; the seats stay held till 4 s
            r = (await rooms.poll(svc.client, ticket_c, c)).json()
            assert not r["admitted"] and not r["soldOut"], r
            await asyncio.sleep(0.1)
        await rooms.admitted(svc.client, ticket_c, c, timeout=6)
        assert time.monotonic() - held_at >= 4


async def test_polling_is_not_charged_against_the_rate_limits(start, h, rooms) -> None:
    async with start(hold_rate_limit_per_minute=2, hold_rate_limit_per_ip_per_minute=5) as svc:
        sid = await svc.showtime()
        await rooms.configure(svc, sid, 5)
        a = h.new_id()
        client = svc.client_from(f"{addresses()}.1")
        ticket = (await rooms.join(client, sid, a)).json()["ticket"]  # 1 of the address's 5
        token = await rooms.admitted(client, ticket, a)
        for _ in range(20):
            assert (await rooms.poll(client, ticket, a)).status_code == 200
        codes = [(await client.post(f"/showtimes/{sid}/holds", json={"seats": [f"F{i}"]},
                                    headers={**h.auth(a), "X-Admission-Token": token})).status_code
                 for i in (1, 2, 3)]
        assert codes == [201, 201, 429]  # the customer's 2 holds a minute; his polls not counted
        b = h.new_id()
        joined = await rooms.join(client, sid, b)
        assert joined.status_code == 202  # the address's 5th request: the 20 polls were not counted
        b_token = await rooms.admitted(client, joined.json()["ticket"], b)
        r = await client.post(f"/showtimes/{sid}/holds", json={"seats": ["F9"]},
                              headers={**h.auth(b), "X-Admission-Token": b_token})
        assert r.status_code == 429  # ...and the 6th is over the address's limit
        await client.aclose()


async def test_per_address_limit_with_and_without_a_trusted_proxy(start, h, rooms) -> None:
    proxy, net = f"10.{random.randint(0, 255)}.{random.randint(0, 255)}.1", addresses()
    async with start(hold_rate_limit_per_ip_per_minute=3, hold_rate_limit_per_minute=100,
                     trusted_proxies=["10.0.0.0/8"]) as svc:
        sid = await svc.showtime({"F": 20})
        await rooms.configure(svc, sid, 5, enabled=False)
        bot = f"{net}.250"

        async def hold_from(client, seat: int, forwarded: str | None = None) -> int:
            headers = {**h.auth(h.new_id()), **({"X-Forwarded-For": forwarded} if forwarded else {})}
            r = await client.post(f"/showtimes/{sid}/holds", json={"seats": [f"F{seat}"]}, headers=headers)
            if r.status_code == 429:
                assert r.json()["error"] == "RATE_LIMITED" and int(r.headers["Retry-After"]) >= 1
            return r.status_code

        direct, via_proxy = svc.client_from(bot), svc.client_from(proxy)
        # Untrusted peer: its X-Forwarded-For is ignored, a fresh address per request does not help.
        assert [await hold_from(direct, i, f"{net}.{i}") for i in (1, 2, 3, 4)] == [201, 201, 201, 429]
        # Through our proxy: each client by its own address; the bot's address is spent, even via the proxy.
        assert [await hold_from(via_proxy, i, f"{net}.{i}, {proxy}") for i in (5, 6)] == [201, 201]
        assert await hold_from(via_proxy, 7, f"6.6.6.6, {bot}") == 429  # what the bot wrote left of it is not read
        await rooms.configure(svc, sid, 5)
        joins = [(await direct.post(f"/showtimes/{sid}/queue", headers=h.auth(h.new_id()))).status_code]
        joins += [(await via_proxy.post(f"/showtimes/{sid}/queue", headers={**h.auth(h.new_id()),
                                        "X-Forwarded-For": f"{net}.99"})).status_code for _ in range(4)]
        assert joins == [429, 202, 202, 202, 429]  # joining the queue is counted too
        await direct.aclose()
        await via_proxy.aclose()


async def test_an_operators_change_reaches_every_process_within_the_cache_time(start, h, rooms) -> None:
    async with start(waiting_room_cache_seconds=0.3) as one, start(waiting_room_cache_seconds=0.3) as two:
        sid = await one.showtime({"F": 20})
        assert (await two.hold(sid, ["F1"])).status_code == 201  # two now remembers "no room"
        await rooms.configure(one, sid, 5)
        changed = time.monotonic()
        for seat in range(2, 21):  # two still answers from its cache (no token needed) for at most 0.3 s
            r = await two.hold(sid, [f"F{seat}"])
            if r.status_code == 403:
                break
            assert r.status_code == 201 and time.monotonic() - changed < 0.3 + 0.5
            await asyncio.sleep(0.05)
        assert r.status_code == 403 and r.json()["error"] == "ADMISSION_REQUIRED"
