"""HAProxy in front of API processes, one configuration for cluster mode (deploy/local/cluster/apps.sh) and
for make bench-overload, so what is measured is what cluster mode runs and what docs/operations.md advises.

A flood several times what the API processes serve must be refused before them: an instance parses every
request it accepts before its shedder sees it (ticketing.api.shedding), and at 4x its capacity that parsing
alone takes its core. So the balancer agrees with the instances' shedding settings, read from the same place
they read them (ServiceSettings: the environment, else .env, else the defaults):
- each server's `maxconn` is a quarter over SHED_MAX_IN_FLIGHT: the instance still decides, by priority,
  which of what it is sent it refuses (reads first, the payment path last), and refuses it at once;
- the routes a rush floods (HOLD_SHARE_ROUTES: taking seats, joining a queue) go through a backend of their
  own whose servers take at most the holds' share of the limit (ticketing.api.limiter.SHARES): an instance
  admits every hold it is sent, and the flood past that is refused by HAProxy, not parsed and refused by the
  instance on the core its admitted holds need (make bench-overload, docs/benchmarks.md);
- the rest waits in HAProxy's queue for SHED_QUEUE_TIMEOUT_MS (`timeout queue`, as long as an instance lets
  a request wait for a slot), then HAProxy answers the contract's 503 UNAVAILABLE itself, with the
  instances' Retry-After, in microseconds of its own CPU. A longer queue only makes the admitted wait.
The 503 (also for 502 and 504: an instance dead mid-request, or slow past `timeout server`) keeps the client's
connection open (Content-Length, no `Connection: close`): a refused client that reconnects for its retry
costs the balancer a handshake each time, and a load generator loses its connections.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ticketing.api.errors import ApiError
from ticketing.api.hot_path import template_regex
from ticketing.api.limiter import SHARES, Priority
from ticketing.settings import ServiceSettings

UNAVAILABLE_MESSAGE = "no instance of this service could take the request, try again shortly"

# What may be sent twice: the methods HTTP calls idempotent, and a request carrying its Idempotency-Key (a
# hold, a checkout: the service answers a second ask with the first one's result). A POST without a key that
# an instance may have acted on before dying is answered the 503, never run again on the other instance.
RETRYABLE = "{ method GET HEAD PUT DELETE OPTIONS } || { req.hdr(Idempotency-Key) -m found }"


# Per door: the (method, path template) of the routes a rush floods, all of the HOLD priority in the service's
# SHED_ROUTES (deploy/tests/test_cluster_balancer.py holds them to hold-service's).
HOLD_SHARE_ROUTES = {"hold-api": (("POST", "/showtimes/{showtime_id}/holds"),
                                  ("POST", "/showtimes/{showtime_id}/queue"))}


@dataclass(frozen=True)
class Door:
    """A front door (`name` on `port`), round robin over its servers' ports (one API process each)."""

    name: str
    port: int
    servers: tuple[int, ...]


@dataclass(frozen=True)
class Shedding:
    """The balancer's side of the instances' shedding settings."""

    server_maxconn: int | None  # None: shedding off, no per-server limit
    hold_maxconn: int | None  # the holds' share of the limit, for HOLD_SHARE_ROUTES
    queue_timeout_ms: int
    retry_after_seconds: int

    @classmethod
    def of(cls, settings: ServiceSettings) -> Shedding:
        limit = settings.shed_max_in_flight
        return cls(server_maxconn=limit + limit // 4 if limit > 0 else None,
                   hold_maxconn=max(1, limit * SHARES[Priority.HOLD] // 100) if limit > 0 else None,
                   # HAProxy counts whole milliseconds, and reads 0 as "no timeout"
                   queue_timeout_ms=max(1, math.ceil(settings.shed_queue_timeout_ms)),
                   retry_after_seconds=settings.shed_retry_after_seconds)


def unavailable_response(shedding: Shedding) -> bytes:
    """The errorfile: the 503 an instance's shedder answers, in the contract's format (ticketing.api.errors)."""
    body = ApiError(503, "UNAVAILABLE", UNAVAILABLE_MESSAGE).content()
    head = ["HTTP/1.1 503 Service Unavailable", "Content-Type: application/json", f"Content-Length: {len(body)}",
            "Cache-Control: no-cache", f"Retry-After: {shedding.retry_after_seconds}",
            "X-Content-Type-Options: nosniff"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def haproxy_config(doors: Sequence[Door], shedding: Shedding, errorfile: Path, *, pidfile: Path | None = None,
                   stats_port: int | None = None, log: bool = True) -> str:
    """The whole haproxy.cfg. An instance that stops answering /healthz is out after three checks a second apart,
    back after two good ones; a request that could not reach an instance (connection refused: it was just killed)
    is sent to the other. `log`: the balancer's own answers and every 5xx on stdout (cluster mode); the bench
    logs nothing, a line per refusal being thousands a second."""
    out = ["# Written by ticketing_testing.balancer; regenerated by every `cluster.sh up`.", "global",
           "    maxconn 8192"]
    out += [f"    pidfile {pidfile}"] if pidfile else []
    out += ["    log stdout format raw local0"] if log else []
    out += ["", "defaults", "    mode http"]
    out += ["    log global", "    option httplog"] if log else []
    out += ["    option forwardfor", "    option redispatch", "    retries 3",
            "    # A request an instance closed the connection on without answering (its keep-alive ran out as the",
            "    # request came on a reused connection, or it died) is sent again on a new connection, where each",
            "    # backend allows it (RETRYABLE). Else HAProxy drops the client's connection with no answer at all.",
            "    retry-on conn-failure empty-response",
            "    # the whole body before the request is sent, so that it can be sent again (and a slow client's",
            "    # body never holds an instance's slot)",
            "    option http-buffer-request",
            "    timeout connect 1s", "    timeout client 60s", "    timeout server 30s", "    timeout tunnel 1h",
            "    timeout http-request 10s", "    timeout check 3s",
            "    # As long as an instance lets a request wait for a slot (SHED_QUEUE_TIMEOUT_MS), then the 503 below.",
            f"    timeout queue {shedding.queue_timeout_ms}ms",
            "    # A killed instance refuses connections: the first refused request takes it out (and goes to the",
            "    # other one), the checks put it back. A busy instance answering its check slowly is not taken out.",
            "    default-server inter 1s fall 3 rise 2 observe layer4 error-limit 1 on-error mark-down",
            *(f"    errorfile {status} {errorfile}" for status in (502, 503, 504))]
    if stats_port is not None:
        out += ["", "listen stats", f"    bind 127.0.0.1:{stats_port}", "    no log", "    stats enable",
                "    stats uri /"]
    # SHED_MAX_IN_FLIGHT and a quarter: the instance refuses, by priority, what is over its limit
    maxconn = f" maxconn {shedding.server_maxconn}" if shedding.server_maxconn else ""
    for door in doors:
        held = f"{door.name}-holds"
        routes = HOLD_SHARE_ROUTES.get(door.name, ()) if shedding.hold_maxconn else ()
        out += ["", f"frontend {door.name}", f"    bind 127.0.0.1:{door.port}"]
        out += [f"    use_backend {held} if {{ method {method} }} {{ path_reg ^{template_regex(path, named=False)}$ }}"
                for method, path in routes]
        out += [f"    default_backend {door.name}",
                "", f"backend {door.name}", "    balance roundrobin", "    option httpchk GET /healthz",
                "    http-check expect status 200", *_backend_rules()]
        out += [f"    server {door.name}-{i} 127.0.0.1:{port} check{maxconn}" for i, port in enumerate(door.servers, 1)]
        if routes:  # the same instances, their health as the door's backend checks it
            out += ["", f"backend {held}", "    balance roundrobin", *_backend_rules()]
            out += [f"    server {held}-{i} 127.0.0.1:{port} track {door.name}/{door.name}-{i} maxconn "
                    f"{shedding.hold_maxconn}" for i, port in enumerate(door.servers, 1)]
    return "\n".join(out) + "\n"


def _backend_rules() -> list[str]:
    # what the services answered below 500 is not logged (the hot path is mostly 409)
    return ["    http-response set-log-level silent if { status lt 500 }",
            f"    http-request disable-l7-retry unless {RETRYABLE}"]


def write(directory: Path, doors: Sequence[Door], settings: ServiceSettings, *, pidfile: Path | None = None,
          stats_port: int | None = None, log: bool = True) -> Path:
    """haproxy.cfg and its errorfile (unavailable.http) in `directory`; the configuration's path."""
    shedding = Shedding.of(settings)
    directory.mkdir(parents=True, exist_ok=True)
    errorfile = directory / "unavailable.http"
    errorfile.write_bytes(unavailable_response(shedding))
    config = directory / "haproxy.cfg"
    config.write_text(haproxy_config(doors, shedding, errorfile, pidfile=pidfile, stats_port=stats_port, log=log))
    return config


def _door(text: str) -> Door:
    """NAME=PORT:SERVER,SERVER..."""
    name, ports = text.split("=", 1)
    port, servers = ports.split(":", 1)
    return Door(name, int(port), tuple(int(s) for s in servers.split(",")))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write haproxy.cfg and its 503 errorfile for API processes.")
    parser.add_argument("directory", type=Path)
    parser.add_argument("doors", nargs="+", type=_door, help="NAME=PORT:SERVER_PORT,SERVER_PORT...")
    parser.add_argument("--pidfile", type=Path)
    parser.add_argument("--stats-port", type=int)
    args = parser.parse_args(argv)
    print(write(args.directory, args.doors, ServiceSettings(), pidfile=args.pidfile, stats_port=args.stats_port))


if __name__ == "__main__":
    main()
