"""Cluster mode's HAProxy (ticketing_testing.balancer, run for real) when an instance closes a reused connection
without answering, as uvicorn does when its keep-alive runs out just as the balancer sends the next request on
that connection, or as an instance killed mid-request does.

Without layer-7 retries HAProxy drops the client's connection with no answer at all (its `http-reuse safe`
leaves the retry to the client): the R16 cluster run once saw a quote "answered" that way. A request that may be
sent twice is sent again on a new connection; a POST without an Idempotency-Key, which the instance may have
acted on, is not.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from deploy_support import run
from tenacity import Retrying, retry_if_result, stop_after_delay, wait_fixed
from ticketing.settings import ServiceSettings
from ticketing_testing.balancer import Door, write


class OneAnswerPerConnection:
    """An instance whose connections answer their first request (keep-alive) and close on the next one without
    a word; /healthz (HAProxy's checks) is always answered. It counts what reached it, by method and path."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.received: Counter[str] = Counter()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            self._answer(conn)
        except OSError:
            pass  # HAProxy's checks reset their connections

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            answered = 0
            buffered = b""
            while True:
                while b"\r\n\r\n" not in buffered:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffered += chunk
                head, buffered = buffered.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                length = next((int(line.split(":", 1)[1]) for line in lines[1:]
                               if line.lower().startswith("content-length:")), 0)
                while len(buffered) < length:
                    buffered += conn.recv(65536)
                buffered = buffered[length:]
                if path != "/healthz":
                    self.received[f"{method} {path}"] += 1
                    if answered:
                        return  # closed without answering, as the request came
                    answered += 1
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"
                             b'{"ok":true}')

    def close(self) -> None:
        self.listener.close()


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def haproxy() -> str:
    run(["deploy/local/cluster.sh", "tools", "haproxy-only"], timeout=900)
    found = shutil.which("haproxy") or "/usr/sbin/haproxy"
    assert Path(found).exists(), "cluster.sh tools did not install haproxy"
    return found


@pytest.fixture
def door(tmp_path: Path, haproxy: str) -> Iterator[tuple[str, OneAnswerPerConnection]]:
    """The balancer's configuration with one front door over the instance above alone (with two servers, round
    robin would send the second request to the other one, on a connection of its own)."""
    instance = OneAnswerPerConnection()
    port = free_port()
    config = write(tmp_path, [Door("api", port, (instance.port,))], ServiceSettings(), log=False)
    process = subprocess.Popen([haproxy, "-db", "-f", str(config)], stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        Retrying(retry=retry_if_result(lambda up: not up), wait=wait_fixed(0.1), stop=stop_after_delay(20))(
            answers, f"{url}/healthz")
        instance.received.clear()
        yield url, instance
    finally:
        process.terminate()
        process.wait(10)
        instance.close()


def second_on_one_connection(url: str, method: str, path: str, **kwargs: object) -> httpx.Response:
    """The second of two requests on one client connection, which HAProxy sends on the instance's idle
    connection that answered the first."""
    with httpx.Client(base_url=url, timeout=10) as client:
        assert client.request(method, path, **kwargs).status_code == 200  # type: ignore[arg-type]
        return client.request(method, path, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("method", "kwargs"), [
    ("GET", {}),
    ("DELETE", {}),
    ("POST", {"json": {"seats": ["A1"]}, "headers": {"Idempotency-Key": "k-1"}}),
])
def test_a_request_that_may_be_sent_twice_is_sent_again_on_a_new_connection(
        door: tuple[str, OneAnswerPerConnection], method: str, kwargs: dict[str, object]) -> None:
    url, instance = door
    r = second_on_one_connection(url, method, "/things", **kwargs)
    assert r.status_code == 200 and r.json() == {"ok": True}
    assert instance.received[f"{method} /things"] == 3  # the first, the one dropped, the one sent again


def test_a_post_without_an_idempotency_key_is_not_sent_again(door: tuple[str, OneAnswerPerConnection]) -> None:
    url, instance = door
    try:
        r: httpx.Response | None = second_on_one_connection(url, "POST", "/things", json={"seats": ["A1"]})
    except httpx.RemoteProtocolError:
        r = None  # what HAProxy does then is its own (an answer or none); that it did not send it again is ours
    assert instance.received["POST /things"] == 2
    assert r is None or r.status_code in (502, 503)
