"""The client's address for the per-address rate limit (`HOLD_RATE_LIMIT_PER_IP_PER_MINUTE`).

The TCP peer, unless the peer is one of `TRUSTED_PROXIES`: then X-Forwarded-For is read from the right (each
proxy appends the address it saw), skipping our own proxies; the first address that is not one is the
client. Anything left of it was written by the client and is never believed. A malformed entry there means
a proxy of ours wrote nonsense: the peer is used (logged once per process). IPv6 clients are limited per
/64, the block one subscriber usually has (per address, a client would rotate through 2^64 of them).
"""

from __future__ import annotations

import ipaddress
import logging
from functools import lru_cache

from starlette.requests import Request
from ticketing.logs import log_action

logger = logging.getLogger(__name__)
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@lru_cache(maxsize=4096)
def limit_key(address: str) -> str:
    """What the limit counts by: the address, or its /64 for IPv6 (IPv4-mapped IPv6 counts as IPv4)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address[:64]  # not an IP (a test client, a unix socket): counted as it is
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class ClientAddress:
    def __init__(self, trusted_proxies: list[str]) -> None:
        self.trusted = [ipaddress.ip_network(p, strict=False) for p in trusted_proxies]
        self._warned = False

    def _is_trusted(self, ip: IPAddress) -> bool:
        return any(ip in net for net in self.trusted)

    def of(self, request: Request) -> str:
        peer = request.client.host if request.client else "unknown"
        return limit_key(self.resolve(peer, request.headers.getlist("x-forwarded-for")))

    def resolve(self, peer: str, forwarded_for: list[str]) -> str:
        if not self.trusted or not self._trusted_text(peer):
            return peer
        hops = [h.strip() for header in forwarded_for for h in header.split(",")]
        for hop in reversed(hops):
            try:
                ip = ipaddress.ip_address(hop)
            except ValueError:
                self._warn(hop)
                return peer
            if not self._is_trusted(ip):
                return hop
        return hops[0] if hops else peer  # only our proxies: the first one faced the client

    def _trusted_text(self, address: str) -> bool:
        try:
            return self._is_trusted(ipaddress.ip_address(address))
        except ValueError:
            return False

    def _warn(self, hop: str) -> None:
        if not self._warned:
            self._warned = True
            log_action(logger, "http.bad_forwarded_for", level=logging.WARNING, hop=hop[:80])
