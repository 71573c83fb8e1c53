"""make bench-granted: granted holds at the speed of their SQL, in one run of interleaved rounds.

Each round, on a showtime of its own each (fresh seats, HOLD_TTL_SECONDS=600 so nothing expires):
  service  hold-service (2 uvicorn workers, the seat gate on, as bench-holds starts it) granting holds of one
           fresh seat per request: wrk's closed loop (bench_holds.wrk_capacity), every request a seat of its own
           and a customer of its own, so every answer the service can give is a 201;
  replay   pgbench replaying exactly the statements one granted hold runs, as one pgbench transaction
           (tests/bench/pgbench/granted_hold.sql: sql/holds.sql take_seats, then the pool's reset), a random seat
           of a large pool per transaction;
  batched  the same statements as the service ran them in the round's service phase (the last one before): its
           writer puts the holds of one showtime that arrive together into one take_seats (adapters/writer.py),
           so under this load a granted hold runs its share of a statement of many. The service's statements are
           read back from its bookings (the holds of one statement share its transaction's created_at); pgbench
           then runs a script of k holds for each size k the service ran, weighted by how many statements of that
           size it ran (batch_script), so it replays the service's statements size for size;
  floor    the service's own floor: the same requests (a token of its own each, same connections) asking for no
           seat, so that each is answered 422 after its token's check, before any dependency: HTTP, the middleware,
           the token, an answer. The API processes' CPU per request of it, against their CPU per granted hold in the
           service phase, splits a hold's Python cost into that floor and the hold's own work (the gate, the
           writer's batch, the numbering, the answer's body);
  bare     pgbench running a bare conditional UPDATE of one such seat (tests/bench/pgbench/granted_bare.sql);
  writes   pgbench writing what a granted hold writes and nothing else: the seat's UPDATE, a booking row and an
           outbox row, one transaction sent in one round trip (tests/bench/pgbench/granted_writes.sql): the floor
           under any statement that decides and writes a hold, how near the replay can come;
  bare+tx  the same UPDATE between BEGIN and COMMIT, sent in one round trip (a pipeline) as the bare UPDATE is;
  bare+showtime, bare+notify, bare+both
           the same, in a transaction that also holds what a hold held until its COMMIT while it numbered its
           seat-map version itself: the showtime's row (updated by every hold of the showtime), a NOTIFY
           (PostgreSQL serializes the commits of every transaction that notified, in the whole server, WAL flush
           included), or both: the ceilings that design put on any replay, whatever its statements cost. A hold
           now gets its version after its COMMIT (sql/schema.sql number_seat_map_changes), free of both.
Beside them, for the run: 1,000 showtimes of 300 seats with 1,000 bookings each, none HELD, analysed first (a
sale opening on a database with a history). The order of the phases turns every round. Each phase runs
SECONDS + 2 s; the figures are those of its middle SECONDS: granted holds are the seats that became HELD (counted
in the database, so a replay that drew a seat taken already is not one), and the database CPU is the user+system
time (/proc) of the client backends of the test database over the same window (the WAL writer, autovacuum and other
databases' backends are not in it: pg_stat_statements is not preloaded here); the API's CPU is that of the
service's uvicorn workers over the same window. Prints per round and the medians:
holds/s of each, service/replay (goal >= 0.5), replay/bare (goal: bare within 3x of the replay, i.e. >= 0.33),
the same two ratios with the batched replay (the replay of what the service ran),
database CPU per granted hold of the service and of the replay, the API's CPU per granted hold and per floor request,
the database-bound ratio (the batched replay's database CPU per hold over the service's: service/batched where the
API does not share the database's cores, as pods beside their database do not), and the transactions per granted hold
(pg_stat_database, approximate: backends flush their counters about once a second). Never fails on a figure.
BENCH_GRANTED_SECONDS, BENCH_GRANTED_ROUNDS and BENCH_GRANTED_CLIENTS (pgbench's connections) change the defaults;
a shared 2-core machine makes every absolute figure noisy, the ratios of one round are what compares.
BENCH_GRANTED_SPLIT=1 gives the database a core of its own for the whole run (cpu_split.py): PostgreSQL on one core,
the service, Redis, wrk and pgbench on the other, as a deployment's API does not share its database's cores; the
figures go to var/bench/granted-split.json.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import asyncpg
import orjson
import uvloop
from bench_holds import DSN, MIGRATIONS, SECRET, forget_events, started_server, wrk_capacity
from cpu_split import CoresSplit
from hold_service.adapters.repository import FORM, Q
from results import Results
from ticketing.auth import issue_token
from ticketing_testing import apply_migrations, shared_migrations
from ticketing_testing.lifted_limits import UNLIMITED_HOLDS

ROOT = Path(__file__).resolve().parents[2]
PGBENCH = Path(__file__).parent / "pgbench"
SECONDS = float(os.environ.get("BENCH_GRANTED_SECONDS", "6"))
ROUNDS = int(os.environ.get("BENCH_GRANTED_ROUNDS", "3"))
SPLIT = os.environ.get("BENCH_GRANTED_SPLIT", "") == "1"
CLIENTS = int(os.environ.get("BENCH_GRANTED_CLIENTS", "16"))
SERVICE_SEATS = int(os.environ.get("BENCH_GRANTED_SERVICE_SEATS", "30000"))  # one request per seat, cycled by wrk
POOL_SEATS = int(os.environ.get("BENCH_GRANTED_POOL_SEATS", "150000"))  # pgbench's random draws
WRK_CONNECTIONS = 64
CAUSE = orjson.dumps([["x-request-id", "0123456789abcdef0123456789abcdef"]]).decode()
FACTORY = "hold_service.entrypoints.api.app:get_application"
PHASES = ("service", "floor", "replay", "batched", "writes", "bare", "bare+tx", "bare+showtime", "bare+notify",
          "bare+both")
# What each ceiling phase adds to the bare UPDATE, in its transaction, before COMMIT (as append_seat_map_events
# did at the end of a hold's statement before the versions came after COMMIT).
SHOWTIME_ROW = "UPDATE showtime SET seat_map_version = seat_map_version + 1 WHERE showtime_id = :sid;"
NOTIFY = "SELECT pg_notify('bench_granted', '');"
CEILINGS = {"bare+tx": [], "bare+showtime": [SHOWTIME_ROW], "bare+notify": [NOTIFY],
            "bare+both": [SHOWTIME_ROW, NOTIFY]}
# hold-service as the service phase runs it (nothing expires during the run, no cap refuses a hold)
SERVICE_ENV = {"HOLD_DATABASE_URL": DSN, "HOLD_TTL_SECONDS": "600", **UNLIMITED_HOLDS, "LOG_LEVEL": "WARNING",
               "DB_POOL_MAX": "20", "APP_ENV": "dev", "SEAT_GATE_ENABLED": "true"}
# Showtimes of 300 seats beside the bench's, for the run: the service plans its statements once per connection
# (force_generic_plan), from the table's statistics. In a test database holding little but this bench's big
# showtimes, an ANALYZE in the middle of the run sees a handful of showtimes and turns seat lookups into scans of
# every seat (a 1000x slowdown); among many showtimes of a hall's size, as in a deployment, it does not.
BACKGROUND_SHOWTIMES = int(os.environ.get("BENCH_GRANTED_BACKGROUND", "1000"))
# Bookings of those showtimes, none of them HELD, analysed before the run: a sale opens on a database with a
# history (a million bookings: autovacuum analyses the table again only after a tenth of it changed, so the
# statistics stay those of the quiet hours through the run, as through a chain's rush). Plans made from them must
# stay good as the rush fills the table with holds (the cap's count once read every hold at each hold's COMMIT
# under them: hold-service migration 0018).
HISTORY_PER_SHOWTIME = int(os.environ.get("BENCH_GRANTED_HISTORY", "1000"))


def seat_code(k: int) -> str:
    """The k-th seat (from 0) of a bench showtime: rows AA, AB... of 1000 seats (the pgbench scripts number
    them the same way)."""
    row = k // 1000
    return chr(65 + row // 26) + chr(65 + row % 26) + str(k % 1000 + 1)


async def new_showtimes(conn: asyncpg.Connection, seats: int, count: int = 1) -> list[int]:
    sids = [random.randint(10**15, 2**52) for _ in range(count)]
    await conn.execute("INSERT INTO showtime (showtime_id, title, starts_at, price_cents, prices) "
                       "SELECT sid, 'bench', now() + interval '1 day', 1000, '{\"STANDARD\": {\"ADULT\": 1000}}' "
                       "FROM unnest($1::bigint[]) sid", sids)
    await conn.execute("INSERT INTO show_seat (showtime_id, seat_code, row_name, x) "
                       "SELECT sid, chr(65 + k / 1000 / 26) || chr(65 + k / 1000 % 26) || (k % 1000 + 1), "
                       "chr(65 + k / 1000 / 26) || chr(65 + k / 1000 % 26), k % 1000 + 1 "
                       "FROM unnest($1::bigint[]) sid, generate_series(0, $2 - 1) k", sids, seats)
    return sids


async def new_showtime(conn: asyncpg.Connection, seats: int) -> int:
    return (await new_showtimes(conn, seats))[0]


async def drop_showtimes(conn: asyncpg.Connection, sids: list[int]) -> None:
    """The bench's rows gone (forget_events first: the outbox rows are found by their showtime)."""
    await forget_events(conn, sids)
    for table in ("booking", "show_seat", "showtime"):
        await conn.execute(f"DELETE FROM {table} WHERE showtime_id = ANY($1::bigint[])", sids)


def sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def replay_script(reset_query: str) -> str:
    """granted_hold.sql with take_seats' text and asyncpg's reset query in place."""
    template = (PGBENCH / "granted_hold.sql").read_text()
    reset = "\\;".join(s.strip() for s in reset_query.split(";") if s.strip())
    script = template.replace("AS TAKE_SEATS;", f"AS {Q.take_seats};").replace("\nRESET_QUERY;", f"\n{reset};")
    assert "TAKE_SEATS;" not in script and "RESET_QUERY;" not in script
    return script


def batch_script(k: int, reset_query: str) -> str:
    """One take_seats of k holds of one seat each, as the writer sends a batch (repository._take_seats): k random
    seats of the pool (the i-th from the i-th k-th of it: distinct, as the seats of the service's requests are), k
    customers, the holds' ids, positions, cause headers and ticket types in arrival order; then the pool's reset.
    A seat drawn by an earlier transaction is refused, as the service refuses it: only the seats that became HELD
    are counted."""
    def array(items: list[str]) -> str:
        return "ARRAY[" + ", ".join(items) + "]"

    holds = range(k)
    draws = [f"\\set k{i} random({i} * :pool / {k}, ({i} + 1) * :pool / {k} - 1)" for i in holds]  # slice i
    codes = [f"chr(65 + (:k{i} / 1000) / 26) || chr(65 + (:k{i} / 1000) % 26) || (:k{i} % 1000 + 1)" for i in holds]
    ids = array(["gen_random_uuid()"] * k)
    customers = array([f":customer + {i}" for i in holds]) + "::bigint[]"
    execute = (f"EXECUTE take_seats(:sid, 600, 8, {ids}, {customers}, {ids}, {array([str(i + 1) for i in holds])}, "
               f"{array(codes)}, {array([':cause'] * k)}, :form, {array([repr('ADULT')] * k)}, 0, false);")
    reset = "\\;".join(q.strip() for q in reset_query.split(";") if q.strip()) + ";"
    return "\n".join(["\\set customer random(1, 1000000000000)", *draws, "\\if :prepared = 0",
                      f"PREPARE take_seats AS {Q.take_seats};", "\\set prepared 1", "\\endif", execute, reset, ""])


async def statement_sizes(conn: asyncpg.Connection, sid: int) -> dict[int, int]:
    """How many take_seats statements of each size (holds) the service ran on the showtime: the holds of one
    statement are one transaction's, so their bookings share its created_at (now())."""
    rows = await conn.fetch("SELECT k, count(*) AS statements FROM (SELECT count(*) AS k FROM booking "
                            "WHERE showtime_id = $1 GROUP BY created_at) s GROUP BY k", sid)
    return {r["k"]: r["statements"] for r in rows}


def with_commit_locks(bare: str, statements: list[str]) -> str:
    """The bare UPDATE (granted_bare.sql) and `statements` in one transaction, sent in one round trip as the bare
    UPDATE is (a pipeline), so that what differs from it is what the transaction holds until its COMMIT."""
    head, update = bare.split("UPDATE show_seat", 1)
    return (head + "\\startpipeline\nBEGIN;\nUPDATE show_seat" + update.rstrip() + "\n" + "\n".join(statements)
            + "\nCOMMIT;\n\\endpipeline\n")


def holds_requests(sid: int, tokens: list[bytes]) -> list[bytes]:
    """One request per seat of the showtime, each by a customer of its own, in a random order."""
    order = list(range(SERVICE_SEATS))
    random.shuffle(order)
    return [hold_request(sid, tokens[n % len(tokens)], {"seats": [seat_code(k)]}) for n, k in enumerate(order)]


def floor_requests(sid: int, tokens: list[bytes]) -> list[bytes]:
    """The floor phase's: the service phase's requests asking for no seat, each by a customer of its own (its
    token checked afresh), answered 422 before any dependency."""
    return [hold_request(sid, token, {"seats": []}) for token in tokens]


def hold_request(sid: int, token: bytes, body: dict) -> bytes:
    data = orjson.dumps(body)
    return (b"POST /showtimes/%d/holds HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (sid, token, len(data), data))


def api_processes(pid: int) -> list[int]:
    """The uvicorn supervisor's workers: its children spawned by multiprocessing (not its resource tracker)."""
    children = [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return [child for child in children if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes()]


def pgbench(script: str | dict[str, int], sid: int, seconds: float, extra: list[str], transactions: int = 0,
            clients: int = CLIENTS) -> str:
    """One script, or several with their weights (pgbench picks one per transaction by weight), for `seconds`
    (or `transactions` per client)."""
    scripts = {script: 1} if isinstance(script, str) else script
    with ExitStack() as files:
        args = []
        for text, weight in scripts.items():
            f = files.enter_context(tempfile.NamedTemporaryFile("w", suffix=".sql"))
            f.write(text)
            f.flush()
            args += ["-f", f"{f.name}@{weight}"]
        out = subprocess.run(["pgbench", "-n", "-c", str(clients), "-j", "1",
                              *(["-t", str(transactions)] if transactions else ["-T", str(round(seconds))]),
                              "-D", f"sid={sid}", "-D", f"pool={POOL_SEATS}", *extra, *args, DSN],
                             capture_output=True, text=True,
                             env={**os.environ, "PGOPTIONS": "-c plan_cache_mode=force_generic_plan"})
    if out.returncode:
        print(f"  pgbench failed: {(out.stderr or out.stdout)[-2000:]}", flush=True)
    return out.stdout


def backend_cpu(pids: list[int]) -> dict[int, float]:
    """Seconds of CPU (user + system) of each process still there."""
    tick, cpu = os.sysconf("SC_CLK_TCK"), {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
    return cpu


async def sample(conn: asyncpg.Connection, sid: int, api: list[int]) -> dict:
    pids = [r["pid"] for r in await conn.fetch(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' "
        "AND pid <> pg_backend_pid()")]
    return {"at": time.perf_counter(), "cpu": backend_cpu(pids), "api": sum(backend_cpu(api).values()),
            "held": await conn.fetchval("SELECT count(*) FROM show_seat WHERE showtime_id = $1 AND status = 'HELD'",
                                        sid),
            "xacts": await conn.fetchval("SELECT xact_commit + xact_rollback FROM pg_stat_database "
                                         "WHERE datname = current_database()")}


async def phase(conn: asyncpg.Connection, sid: int, load, api: list[int]) -> dict:  # type: ignore[no-untyped-def]
    """`load(seconds)` in a thread for SECONDS + 2 s; the figures of its middle SECONDS (`api`: the service's
    workers, whose CPU is read over the same window)."""
    task = asyncio.create_task(asyncio.to_thread(load, SECONDS + 2))
    await asyncio.sleep(1.0)
    a = await sample(conn, sid, api)
    await asyncio.sleep(SECONDS)
    b = await sample(conn, sid, api)
    result = await task
    seconds = b["at"] - a["at"]
    cpu = sum(v - a["cpu"].get(pid, 0.0) for pid, v in b["cpu"].items())
    granted = b["held"] - a["held"]
    return {"per_s": granted / seconds, "granted": granted, "db_cpu_ms_per_hold": 1000 * cpu / max(1, granted),
            "db_cores": cpu / seconds, "api_cores": (b["api"] - a["api"]) / seconds,
            "api_cpu_ms_per_hold": 1000 * (b["api"] - a["api"]) / max(1, granted),
            "xacts_per_hold": (b["xacts"] - a["xacts"]) / max(1, granted),
            "result": result}


async def main() -> dict:
    if not shutil.which("wrk") or not shutil.which("pgbench"):
        raise SystemExit("bench-granted needs wrk and pgbench (make bench-tools limit-tools)")
    apply_migrations(DSN, shared_migrations(), MIGRATIONS)
    tokens = [issue_token(SECRET, sub=str(random.randint(10**9, 2**40)), role="customer", ttl_seconds=7200).encode()
              for _ in range(SERVICE_SEATS)]
    conn = await asyncpg.connect(DSN)
    reset_query = conn.get_reset_query()
    replay = replay_script(reset_query)
    bare = (PGBENCH / "granted_bare.sql").read_text()
    writes = (PGBENCH / "granted_writes.sql").read_text()
    replay_args = ["-M", "simple", "-D", "prepared=0", "-D", f"cause={sql_literal(CAUSE)}",
                   "-D", f"form={sql_literal(FORM)}"]
    background = await new_showtimes(conn, 300, BACKGROUND_SHOWTIMES)
    await conn.execute("INSERT INTO booking (hold_id, booking_id, customer_id, showtime_id, seats, amount_cents, "
                       "status, expires_at) SELECT gen_random_uuid(), gen_random_uuid(), (random() * 1e12)::bigint, "
                       "sid, ARRAY['AA' || k], 1000, (ARRAY['BOOKED', 'RELEASED', 'EXPIRED'])[1 + k % 3], now() "
                       "FROM unnest($1::bigint[]) sid, generate_series(1, $2) k", background, HISTORY_PER_SHOWTIME)
    await conn.execute("ANALYZE show_seat")
    await conn.execute("ANALYZE booking")
    rounds, sids, double, sizes = [], [], 0, {1: 1}
    with ExitStack() as stack:
        if SPLIT:
            split = stack.enter_context(CoresSplit())
            print(f"split: PostgreSQL on core {sorted(split.database_cores)}, the service, Redis, wrk and pgbench on "
                  f"{sorted(split.other_cores)}", flush=True)
        port, supervisor = started_server(stack, FACTORY, SERVICE_ENV)
        api = api_processes(supervisor)
        for n in range(ROUNDS):
            got: dict[str, dict] = {}
            order = PHASES[n % len(PHASES):] + PHASES[:n % len(PHASES)]
            for name in order:
                sid = await new_showtime(conn, {"service": SERVICE_SEATS, "floor": 1}.get(name, POOL_SEATS))
                if name == "service":
                    sids.append(sid)
                if name == "service":
                    requests = holds_requests(sid, tokens)
                    got[name] = await phase(conn, sid, lambda s, r=requests: wrk_capacity(
                        port, r, s, connections=WRK_CONNECTIONS), api)
                    got[name]["answers"] = got[name].pop("result").codes
                    sizes = await statement_sizes(conn, sid)  # round 1 starts with it: the next batched's
                    got[name]["statement_sizes"] = sizes
                elif name == "floor":
                    got[name] = await phase(conn, sid, lambda s, r=floor_requests(sid, tokens): wrk_capacity(
                        port, r, s, connections=WRK_CONNECTIONS), api)
                    stats = got[name].pop("result")
                    got[name].update(answers=stats.codes, per_s=stats.rate,
                                     api_cpu_ms_per_request=1000 * got[name]["api_cores"] / max(1e-9, stats.rate))
                    await drop_showtimes(conn, [sid])
                else:
                    script, extra = ((replay, replay_args) if name == "replay" else
                                     ({batch_script(k, reset_query): n for k, n in sizes.items()}, replay_args)
                                     if name == "batched" else
                                     (writes, ["-M", "prepared"]) if name == "writes" else
                                     (with_commit_locks(bare, CEILINGS[name]), ["-M", "prepared"]) if name in CEILINGS
                                     else (bare, ["-M", "prepared"]))
                    got[name] = await phase(conn, sid, lambda s, sc=script, sid=sid, ex=extra: pgbench(sc, sid, s, ex),
                                            api)
                    got[name].pop("result")
                    if name == "batched":
                        got[name]["statement_sizes"] = sizes  # the last service phase's, which it replayed
                    if name != "writes":  # its bookings are written whatever its UPDATE found (granted_writes.sql)
                        double += await held_twice(conn, sid)
                    await drop_showtimes(conn, [sid])  # its many seats would weigh in the next ANALYZE
                await asyncio.sleep(0.5)
            r = {name: {k: round(v, 3) if isinstance(v, float) else v for k, v in got[name].items()} for name in PHASES}
            r["order"] = list(order)
            r["service_of_replay"] = round(got["service"]["per_s"] / max(1e-9, got["replay"]["per_s"]), 3)
            r["replay_of_bare"] = round(got["replay"]["per_s"] / max(1e-9, got["bare"]["per_s"]), 3)
            r["service_of_batched"] = round(got["service"]["per_s"] / max(1e-9, got["batched"]["per_s"]), 3)
            r["batched_of_bare"] = round(got["batched"]["per_s"] / max(1e-9, got["bare"]["per_s"]), 3)
            r["db_bound_of_batched"] = round(got["batched"]["db_cpu_ms_per_hold"]
                                             / max(1e-9, got["service"]["db_cpu_ms_per_hold"]), 3)
            for name in ("writes", *CEILINGS):
                r[f"{name}_of_bare"] = round(got[name]["per_s"] / max(1e-9, got["bare"]["per_s"]), 3)
            rounds.append(r)
            print_round(n + 1, r)
    for sid in sids:
        double += await held_twice(conn, sid)
    await drop_showtimes(conn, sids + background)
    await conn.close()
    return summary(rounds, double)


async def held_twice(conn: asyncpg.Connection, sid: int) -> int:
    return int(await conn.fetchval("SELECT count(*) FROM (SELECT seat FROM booking, unnest(seats) seat WHERE "
                                   "showtime_id = $1 AND status = 'HELD' GROUP BY seat HAVING count(*) > 1) d", sid))


def print_round(n: int, r: dict) -> None:
    s, p, b = r["service"], r["replay"], r["bare"]
    print(f"round {n} ({' -> '.join(r['order'])}): service {s['per_s']:7.0f} holds/s "
          f"(DB CPU {s['db_cpu_ms_per_hold']:.2f} ms/hold, {s['xacts_per_hold']:.2f} xacts/hold; answers "
          f"{s['answers']}); replay {p['per_s']:7.0f}/s (DB CPU {p['db_cpu_ms_per_hold']:.2f} ms/hold, "
          f"{p['xacts_per_hold']:.2f} xacts/hold); bare {b['per_s']:7.0f}/s (DB CPU {b['db_cpu_ms_per_hold']:.2f} "
          f"ms); service/replay {r['service_of_replay']:.2f}, replay/bare {r['replay_of_bare']:.2f}", flush=True)
    t = r["batched"]
    print(f"  batched (the last service phase's statements, {mean_size(t['statement_sizes']):.1f} holds each on "
          f"average): {t['per_s']:.0f} holds/s (DB CPU {t['db_cpu_ms_per_hold']:.2f} ms/hold, "
          f"{t['xacts_per_hold']:.2f} xacts/hold); service/batched {r['service_of_batched']:.2f}, batched/bare "
          f"{r['batched_of_bare']:.2f}", flush=True)
    f = r["floor"]
    print(f"  the API's CPU: {s['api_cpu_ms_per_hold']:.3f} ms per granted hold; its floor (no seat asked, 422 after "
          f"the token's check) {f['per_s']:.0f} requests/s, {f['api_cpu_ms_per_request']:.3f} ms per request "
          f"(answers {f['answers']}); database-bound service/batched {r['db_bound_of_batched']:.2f}", flush=True)
    print("  floor and ceilings: " + ", ".join(f"{name} {r[name]['per_s']:.0f}/s ({r[f'{name}_of_bare']:.2f} of bare)"
                                     for name in ("writes", *CEILINGS)), flush=True)


def mean_size(sizes: dict[int, int]) -> float:
    """Holds per statement, averaged over the holds (the size the statement of a hold had, on average)."""
    return sum(k * k * n for k, n in sizes.items()) / max(1, sum(k * n for k, n in sizes.items()))


def summary(rounds: list[dict], double: int) -> dict:
    def med(path: tuple[str, ...]) -> float:
        values = []
        for r in rounds:
            v = r
            for key in path:
                v = v[key]
            values.append(v)
        return round(statistics.median(values), 3)

    out = {"seconds": SECONDS, "split": SPLIT, "rounds": rounds, "pgbench_clients": CLIENTS,
           "wrk_connections": WRK_CONNECTIONS, "double_holds": double,
           "median": {"service_per_s": med(("service", "per_s")), "replay_per_s": med(("replay", "per_s")),
                      "bare_per_s": med(("bare", "per_s")), "service_of_replay": med(("service_of_replay",)),
                      "replay_of_bare": med(("replay_of_bare",)),
                      "batched_per_s": med(("batched", "per_s")), "service_of_batched": med(("service_of_batched",)),
                      "batched_of_bare": med(("batched_of_bare",)),
                      "batched_db_cpu_ms_per_hold": med(("batched", "db_cpu_ms_per_hold")),
                      "statement_size": round(statistics.median(mean_size(r["batched"]["statement_sizes"])
                                                                for r in rounds), 1),
                      "service_db_cpu_ms_per_hold": med(("service", "db_cpu_ms_per_hold")),
                      "service_api_cpu_ms_per_hold": med(("service", "api_cpu_ms_per_hold")),
                      "floor_per_s": med(("floor", "per_s")),
                      "floor_api_cpu_ms_per_request": med(("floor", "api_cpu_ms_per_request")),
                      "db_bound_of_batched": med(("db_bound_of_batched",)),
                      "replay_db_cpu_ms_per_hold": med(("replay", "db_cpu_ms_per_hold")),
                      "bare_db_cpu_ms_per_hold": med(("bare", "db_cpu_ms_per_hold")),
                      "service_xacts_per_hold": med(("service", "xacts_per_hold")),
                      "replay_xacts_per_hold": med(("replay", "xacts_per_hold")),
                      **{f"{name}_of_bare": med((f"{name}_of_bare",)) for name in ("writes", *CEILINGS)},
                      **{f"{name}_per_s": med((name, "per_s")) for name in ("writes", *CEILINGS)}}}
    m = out["median"]
    print(f"\nmachine: {os.cpu_count()} cores (shared; absolute figures are noisy, compare the ratios of one run)"
          f"{'; the database on a core of its own, the rest on the other' if SPLIT else ''}; "
          f"{len(rounds)} interleaved rounds of {SECONDS:.0f} s per phase; wrk {WRK_CONNECTIONS} connections, "
          f"pgbench {CLIENTS} clients; one fresh seat per hold")
    print(f"median: service {m['service_per_s']:.0f} holds/s, replay {m['replay_per_s']:.0f} tx/s, "
          f"bare UPDATE {m['bare_per_s']:.0f} tx/s")
    print(f"  service/replay {m['service_of_replay']:.2f} (goal >= 0.5); replay/bare {m['replay_of_bare']:.2f} "
          f"(goal >= 0.33: the bare UPDATE within 3x of the replay)")
    print(f"  the service's statements replayed as it ran them ({m['statement_size']:.1f} holds per statement, per "
          f"hold): {m['batched_per_s']:.0f} holds/s, DB CPU {m['batched_db_cpu_ms_per_hold']:.2f} ms/hold; "
          f"service/batched {m['service_of_batched']:.2f} (goal >= 0.5), batched/bare {m['batched_of_bare']:.2f} "
          f"(goal >= 0.33)")
    print(f"  database CPU per granted hold: service {m['service_db_cpu_ms_per_hold']:.2f} ms, replay "
          f"{m['replay_db_cpu_ms_per_hold']:.2f} ms, bare UPDATE {m['bare_db_cpu_ms_per_hold']:.2f} ms "
          f"(client backends of the test database); transactions per granted hold: service "
          f"{m['service_xacts_per_hold']:.2f}, replay {m['replay_xacts_per_hold']:.2f}")
    own = m["service_api_cpu_ms_per_hold"] - m["floor_api_cpu_ms_per_request"]
    print(f"  the API's CPU per granted hold: {m['service_api_cpu_ms_per_hold']:.3f} ms = its floor (HTTP, the "
          f"middleware, the token's check, an answer: {m['floor_per_s']:.0f} requests/s) "
          f"{m['floor_api_cpu_ms_per_request']:.3f} ms + the hold's own work {own:.3f} ms")
    print(f"  database-bound service/batched (the batched replay's database CPU per hold over the service's: the "
          f"ratio where the API has cores of its own): {m['db_bound_of_batched']:.2f} (goal >= 0.5)")
    print(f"  a hold's writes alone (the floor under the replay): {m['writes_per_s']:.0f} tx/s, "
          f"{m['writes_of_bare']:.2f} of the bare UPDATE")
    print("  ceilings, of the bare UPDATE: " + ", ".join(f"{name} {m[f'{name}_of_bare']:.2f}" for name in CEILINGS)
          + " (the share of the bare UPDATE's rate left once a transaction holds the showtime's row, notifies, or"
          " both, until its COMMIT: the bounds of a hold that numbered its own seat-map version)")
    print(f"  seats held twice: {double}")
    return out


async def run_and_save() -> None:
    with Results("granted-split" if SPLIT else "granted") as r:
        r.data.update(await main())


if __name__ == "__main__":
    sys.exit(uvloop.run(run_and_save()))
