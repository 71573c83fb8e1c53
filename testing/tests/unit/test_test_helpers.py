"""ticketing_testing's helpers that the whole suite leans on."""

from __future__ import annotations

import random
import socket

from ticketing_testing import _ephemeral_low, free_port


def test_a_free_port_is_bindable_and_below_the_range_outgoing_connections_draw_from() -> None:
    low = _ephemeral_low()
    ports = {free_port() for _ in range(50)}
    assert all(1024 <= p < low for p in ports)
    assert len(ports) > 40  # drawn at random, not one port handed out again and again
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports.pop()))


def test_two_processes_seeding_the_global_generator_alike_still_draw_different_ports() -> None:
    state = random.getstate()  # the rest of the session draws ids from it: seeded, a rerun on the same test
    try:                       # database would draw the same showtime ids again (SHOWTIME_EXISTS)
        random.seed(7)
        first = [free_port() for _ in range(5)]
        random.seed(7)
        assert [free_port() for _ in range(5)] != first
    finally:
        random.setstate(state)


def test_a_port_someone_listens_on_is_never_handed_out(monkeypatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        draws = iter([busy, busy, 0])  # 0: whatever the kernel gives, once the busy one was refused twice
        monkeypatch.setattr("ticketing_testing._ports.randrange", lambda *_: next(draws))
        monkeypatch.setattr("ticketing_testing.PORT_SLICES", 1)  # every port in this process's slice
        monkeypatch.setattr("ticketing_testing._port_slice", lambda: 0)
        assert free_port() == 0


def test_workers_draw_ports_from_slices_of_their_own_and_never_hand_one_out_twice(monkeypatch) -> None:
    drawn = {}
    for worker in ("gw0", "gw1", ""):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        drawn[worker] = [free_port() for _ in range(100)]
    for worker, ports in drawn.items():
        assert len(set(ports)) == len(ports), worker  # not twice, though each was free again once checked
    assert not set(drawn["gw0"]) & set(drawn["gw1"]) and not set(drawn["gw0"] + drawn["gw1"]) & set(drawn[""])
