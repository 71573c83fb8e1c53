"""make bench-granted replays hold-service's statements as the service ran them: the holds of one take_seats
share its transaction's created_at, which is how the bench reads the statements' sizes back (statement_sizes), and
batch_script(k) runs one take_seats of k holds, as the writer sends a batch (repository.take_together). Its floor
phase's requests are answered by the service before any dependency, and the CPU it reads is its workers'."""

from __future__ import annotations

import socket
import sys
import uuid
from contextlib import ExitStack
from pathlib import Path

import asyncpg
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the benchmarks import each other by module name
from bench_granted import (
    CAUSE,
    DSN,
    FACTORY,
    MIGRATIONS,
    PGBENCH,
    SECRET,
    SERVICE_ENV,
    api_processes,
    backend_cpu,
    batch_script,
    drop_showtimes,
    floor_requests,
    holds_requests,
    mean_size,
    new_showtime,
    pgbench,
    sql_literal,
    statement_sizes,
)
from bench_holds import started_server
from hold_service.adapters import repository
from hold_service.domain.model import TakeSeats
from ticketing.auth import issue_token
from ticketing.launcher import API_SERVER_OPTIONS
from ticketing_testing import apply_migrations, shared_migrations

pytestmark = pytest.mark.integration


def test_a_hold_counts_as_its_statement_size() -> None:
    assert mean_size({1: 4}) == 1 and mean_size({3: 1, 1: 3}) == 2  # 3 holds in statements of 3, 3 alone
    assert mean_size({}) == 0


async def test_the_replay_runs_the_statements_the_service_ran() -> None:
    apply_migrations(DSN, shared_migrations(), MIGRATIONS)
    conn = await asyncpg.connect(DSN)
    sids = [await new_showtime(conn, 30), await new_showtime(conn, 30)]
    try:
        served, replayed = sids
        takes = [(TakeSeats(served, [seat], uuid.uuid4(), 7_000 + n, 600, uuid.uuid4(), 8), CAUSE)
                 for n, seat in enumerate(["AA1", "AA2", "AA3"])]
        verdicts = await repository.take_together(conn, served, takes)  # the writer's batch: one statement
        assert all(v is not None and v.expires_at is not None for v in verdicts.values()), verdicts
        sizes = await statement_sizes(conn, served)
        assert sizes == {3: 1}

        scripts = {batch_script(k, conn.get_reset_query()): n for k, n in sizes.items()}
        out = pgbench(scripts, replayed, 0, ["-M", "simple", "-D", "prepared=0", "-D", f"cause={sql_literal(CAUSE)}",
                                             "-D", f"form={sql_literal(repository.FORM)}", "-D", "pool=30"],
                      transactions=1, clients=1)
        assert "number of failed transactions: 0" in out, out
        assert await statement_sizes(conn, replayed) == {3: 1}  # seats of different thirds: all written
        held = await conn.fetch("SELECT seat_code, customer_id FROM show_seat WHERE showtime_id = $1 "
                                "AND status = 'HELD'", replayed)
        assert len(held) == 3 and len({r["customer_id"] for r in held}) == 3
        assert await conn.fetchval("SELECT count(*) FROM outbox WHERE message_key IN "
                                   "(SELECT booking_id::text FROM booking WHERE showtime_id = $1)", replayed) == 3
    finally:
        await drop_showtimes(conn, sids)
        await conn.close()


async def test_the_writes_phase_leaves_nothing_once_its_showtime_is_dropped() -> None:
    """Its outbox row is pending, as a hold's, and names the phase's showtime: one naming another showtime would
    outlive the cleanup, and the numbering of every later change in the database would stop at it (a change of
    no showtime)."""
    apply_migrations(DSN, shared_migrations(), MIGRATIONS)
    conn = await asyncpg.connect(DSN)
    sid = await new_showtime(conn, 30)
    rows = ("SELECT count(*) FROM outbox WHERE (convert_from(payload, 'UTF8')::jsonb ->> 'showtimeId')::bigint = $1 "
            "AND (pending OR NOT $2)")
    try:
        out = pgbench((PGBENCH / "granted_writes.sql").read_text(), sid, 0, ["-M", "prepared", "-D", "pool=30"],
                      transactions=1, clients=1)
        assert "number of failed transactions: 0" in out, out
        assert await conn.fetchval(rows, sid, False) == 1
    finally:
        await drop_showtimes(conn, [sid])
    try:
        assert await conn.fetchval(rows, sid, True) == 0
    finally:
        await conn.close()


def test_the_floor_is_answered_before_any_dependency_by_the_workers_it_measures() -> None:
    """The floor phase's request, as wrk sends it, is refused 422 (no seat asked) for a showtime that does not
    exist, where the service phase's gets 404 from the showtime's lookup: it is answered before any dependency.
    Its CPU is read from the supervisor's two uvicorn workers, served as every deployment serves them."""
    apply_migrations(DSN, shared_migrations(), MIGRATIONS)
    token = issue_token(SECRET, sub="4242", role="customer", ttl_seconds=600).encode()
    nowhere = 9_007_199_254_740_000  # no such showtime
    with ExitStack() as stack:
        port, supervisor = started_server(stack, FACTORY, SERVICE_ENV)
        argv = Path(f"/proc/{supervisor}/cmdline").read_bytes().decode().split("\0")
        at = argv.index(API_SERVER_OPTIONS[0])
        assert tuple(argv[at:at + len(API_SERVER_OPTIONS)]) == API_SERVER_OPTIONS  # no proxy-headers layer...
        workers = api_processes(supervisor)
        assert len(workers) == 2 and set(backend_cpu(workers)) == set(workers)  # not the resource tracker
        floor = answer(port, floor_requests(nowhere, [token])[0])
        assert floor.startswith(b"HTTP/1.1 422"), floor
        held = answer(port, holds_requests(nowhere, [token])[0])
        assert held.startswith(b"HTTP/1.1 404"), held


def answer(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        return s.recv(65536)
