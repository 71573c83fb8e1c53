"""Cluster mode's HAProxy (ticketing_testing.balancer, run for real) sends an instance at most the holds' share of
its shedding limit of the routes a rush floods (taking seats, joining a queue), and the rest of its routes up to
the limit and a quarter, so that a flood of holds is refused by the balancer and never crowds out a checkout.

An instance admits a hold only while fewer than three quarters of SHED_MAX_IN_FLIGHT are in flight
(ticketing.api.limiter.SHARES); a balancer that sent it more holds than that had it parse and refuse them on the
core its admitted holds need (make bench-overload at 4x, docs/benchmarks.md).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from deploy_support import run
from tenacity import Retrying, retry_if_result, stop_after_delay, wait_fixed
from ticketing.api.limiter import SHARES, Priority
from ticketing.api.shedding import ShedRoute
from ticketing.settings import ServiceSettings
from ticketing_testing.balancer import HOLD_SHARE_ROUTES, UNAVAILABLE_MESSAGE, Door, Shedding, write

LIMIT = 8  # SHED_MAX_IN_FLIGHT: holds' share 6, every route 10
ANSWER_AFTER = 1.5  # seconds an instance takes with each request: every one sent at once is in flight together


class SlowInstance(ThreadingHTTPServer):
    """Answers every request after ANSWER_AFTER seconds (/healthz at once), and keeps the most requests it had in
    flight at once, by method and path."""

    daemon_threads = True
    request_queue_size = 128  # socketserver's 5 would overflow with everything sent at once (uvicorn's: 2048)

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.in_flight: Counter[str] = Counter()
        self.most: Counter[str] = Counter()


class _Handler(BaseHTTPRequestHandler):
    server: SlowInstance
    protocol_version = "HTTP/1.1"

    def _serve(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        route = f"{self.command} {self.path}"
        if self.path != "/healthz":
            with self.server.lock:
                self.server.in_flight[route] += 1
                self.server.most[route] = max(self.server.most[route], self.server.in_flight[route])
            time.sleep(ANSWER_AFTER)
            with self.server.lock:
                self.server.in_flight[route] -= 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = _serve

    def log_message(self, *args: object) -> None:
        pass


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.TransportError:
        return False


@pytest.fixture
def door(tmp_path: Path) -> Iterator[tuple[str, SlowInstance]]:
    run(["deploy/local/cluster.sh", "tools", "haproxy-only"], timeout=900)
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    instance = SlowInstance()
    threading.Thread(target=instance.serve_forever, daemon=True).start()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = ServiceSettings(shed_max_in_flight=LIMIT, shed_queue_timeout_ms=5)
    config = write(tmp_path, [Door("hold-api", port, (instance.server_port,))], settings, log=False)
    process = subprocess.Popen([haproxy, "-db", "-f", str(config)], stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        Retrying(retry=retry_if_result(lambda up: not up), wait=wait_fixed(0.1), stop=stop_after_delay(20))(
            answers, f"{url}/healthz")
        yield url, instance
    finally:
        process.terminate()
        process.wait(10)
        instance.shutdown()
        instance.server_close()


def at_once(url: str, requests: list[tuple[str, str]]) -> list[httpx.Response]:
    def send(request: tuple[str, str]) -> httpx.Response:
        method, path = request
        return httpx.request(method, f"{url}{path}", json={"seats": ["A1"]} if method == "POST" else None,
                             timeout=30)

    with ThreadPoolExecutor(len(requests)) as pool:
        return list(pool.map(send, requests))


def test_a_flood_of_holds_reaches_an_instance_only_up_to_the_holds_share(door: tuple[str, SlowInstance]) -> None:
    url, instance = door
    share = Shedding.of(ServiceSettings(shed_max_in_flight=LIMIT)).hold_maxconn
    assert share == LIMIT * SHARES[Priority.HOLD] // 100 == 6
    answered = at_once(url, [("POST", "/showtimes/7/holds")] * 16)
    codes = Counter(r.status_code for r in answered)
    assert instance.most["POST /showtimes/7/holds"] == share, instance.most
    # Usually exactly `share` answered; on a loaded machine a thread may send its request only after the first
    # answers came (1.5 s), and that one finds a slot free (CI once: 7 answered, 9 refused).
    assert set(codes) == {200, 503} and codes[200] >= share and codes[200] + codes[503] == 16, codes
    refused = next(r for r in answered if r.status_code == 503)
    assert refused.json()["message"] == UNAVAILABLE_MESSAGE  # the balancer's own answer, not the instance's


def test_other_routes_still_reach_it_up_to_the_limit_and_a_quarter_beside_a_flood_of_holds(
        door: tuple[str, SlowInstance]) -> None:
    url, instance = door
    answered = at_once(url, [("POST", "/showtimes/7/holds")] * 12 + [("POST", "/holds/h-1/extend")] * 12)
    extended = Counter(r.status_code for r in answered[12:])
    assert instance.most["POST /showtimes/7/holds"] == 6
    assert instance.most["POST /holds/h-1/extend"] == LIMIT + LIMIT // 4, instance.most
    assert extended[200] >= LIMIT + LIMIT // 4  # more when a request is sent late (the test above)


def test_the_hold_share_routes_are_hold_services_routes_of_the_hold_priority() -> None:
    from hold_service.entrypoints.api.app import SHED_ROUTES

    declared: list[ShedRoute] = SHED_ROUTES
    assert {(r.method, r.path) for r in declared if r.priority == Priority.HOLD} == set(HOLD_SHARE_ROUTES["hold-api"])
