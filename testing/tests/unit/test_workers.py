"""ticketing_testing.workers: what each pytest-xdist worker gets of its own."""

from __future__ import annotations

import itertools

import pytest
from ticketing_testing.workers import OWN_REDIS_DBS, group_prefix, own_redis_db, worker_database

WORKERS = ["", "gw0", "gw1", "gw2", "gw3"]  # "": one process, no xdist


def test_one_process_keeps_the_names_it_always_had() -> None:
    assert worker_database("ticketing_test", "") == "ticketing_test"
    assert group_prefix("vtest-", "") == "vtest-"
    assert [own_redis_db("redis://127.0.0.1:6379/0", n, "") for n in range(OWN_REDIS_DBS)] == [
        "redis://127.0.0.1:6379/15", "redis://127.0.0.1:6379/14", "redis://127.0.0.1:6379/13"]


def test_each_worker_has_a_database_and_stable_groups_of_its_own() -> None:
    assert worker_database("ticketing_test", "gw1") == "ticketing_test_gw1"
    assert len({worker_database("t", w) for w in WORKERS}) == len(WORKERS)
    assert group_prefix("vtest-", "gw0") == "vtest-gw0-" != group_prefix("vtest-", "gw1")


def test_no_two_workers_flush_the_same_redis_database_and_none_flushes_db_0() -> None:
    url = "redis://:secret@127.0.0.1:6400/0"
    owned = {w: {own_redis_db(url, n, w) for n in range(OWN_REDIS_DBS)} for w in WORKERS[1:]}
    for a, b in itertools.combinations(owned.values(), 2):
        assert not a & b
    every = set().union(*owned.values())
    assert len(every) == OWN_REDIS_DBS * len(owned)
    assert all(u.startswith("redis://:secret@127.0.0.1:6400/") and not u.endswith("/0") for u in every)


def test_a_worker_asking_for_more_than_its_share_is_refused() -> None:
    with pytest.raises(ValueError):
        own_redis_db("redis://127.0.0.1:6379/0", OWN_REDIS_DBS, "gw0")
    with pytest.raises(RuntimeError):
        own_redis_db("redis://127.0.0.1:6379/0", 0, "gw5")  # db 0 would be next


class Item:
    def __init__(self, serial: bool) -> None:
        self.serial = serial

    def get_closest_marker(self, name: str) -> object:
        return object() if name == "serial" and self.serial else None


def test_a_worker_fails_serial_tests_unrun_and_one_process_runs_them(monkeypatch) -> None:
    from ticketing_testing import pytest_plugin

    monkeypatch.setattr(pytest_plugin, "WORKER", "gw1")
    with pytest.raises(pytest.fail.Exception, match="never runs beside others"):
        pytest_plugin.pytest_runtest_setup(Item(serial=True))  # type: ignore[arg-type]
    pytest_plugin.pytest_runtest_setup(Item(serial=False))  # type: ignore[arg-type]
    monkeypatch.setattr(pytest_plugin, "WORKER", "")
    pytest_plugin.pytest_runtest_setup(Item(serial=True))  # type: ignore[arg-type]
