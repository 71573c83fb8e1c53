"""Where the demo's customers come from: many loopback addresses, as a real sale's customers come from many.

hold-service counts HOLD_RATE_LIMIT_PER_IP_PER_MINUTE (holds and queue joins) by the TCP peer, on `make up` and
on the demo's own stack as deployed. Thousands of customers all on 127.0.0.1 would be one client to it: their
holds would be refused by their address, not decided by the sale. Linux routes all of 127.0.0.0/8 to lo, so
each customer's connections bind a source address of their own block (httpx's `local_address`): at most
`--customers-per-address` customers share one, as a household or a small office shares its router's address.

A run draws its block, 127.B.0.0/16: a run right after another does not start with the counts the last one
left in the limiter's window. The sale's own calls (showtimes, the voucher, the probe of the hold time) come
from the block's last address, never from 127.0.0.1, whose count any other client of the machine may have spent.
"""

from __future__ import annotations

import random
import ssl
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

import httpx

from ..e2e.customers import KEEPALIVE_EXPIRY

HOSTS = 254  # per /24 of the block: .1 to .254
BLOCK_HOSTS = 256 * HOSTS - 1  # customers' addresses; the last one is the organizer's
SECOND_OCTETS = (64, 191)  # a block 127.B.0.0/16 with B drawn from these (never 127.0.x.x)


@dataclass(frozen=True)
class Block:
    octet: int

    def address(self, n: int) -> str:
        """The block's n-th address (0-based): 127.B.(n // 254).(n % 254 + 1)."""
        if not 0 <= n <= BLOCK_HOSTS:
            raise ValueError(f"a block has {BLOCK_HOSTS} customers' addresses; asked for the {n}-th")
        return f"127.{self.octet}.{n // HOSTS}.{n % HOSTS + 1}"

    @property
    def organizer(self) -> str:
        return self.address(BLOCK_HOSTS)


def draw_block() -> Block:
    return Block(random.SystemRandom().randint(*SECOND_OCTETS))


def addresses_needed(customers: int, per_address: int) -> int:
    return -(-customers // per_address)


def deal(block: Block, workers: list[int], per_address: int) -> list[list[str]]:
    """Each worker's customers' addresses (`workers`: how many customers each worker plays): an address
    belongs to one worker (its connections are that process's) and to at most `per_address` customers."""
    if sum(addresses_needed(customers, per_address) for customers in workers) > BLOCK_HOSTS:
        raise ValueError(f"more than {BLOCK_HOSTS} addresses: raise --customers-per-address")
    out, n = [], 0
    for customers in workers:
        own = [block.address(n + k) for k in range(addresses_needed(customers, per_address))]
        n += len(own)
        out.append([own[k // per_address] for k in range(customers)])
    return out


# httpx builds an SSL context per transport (the CA bundle read each time, some milliseconds); the demo speaks
# plain HTTP, and hundreds of transports share this one.
_TLS = ssl.create_default_context()


@dataclass
class Clients:
    """One HTTP client per source address of a customer process. A client opens connections as its calls
    need them (browsing calls are bounded by the process's share of --connections, the sale's semaphore, and a
    customer who pays never waits for a connection); it keeps `keepalive` of them open between calls, each
    for at most KEEPALIVE_EXPIRY idle (under the servers' keep-alive)."""

    keepalive: int
    timeout: float = 30.0
    _clients: dict[str, httpx.AsyncClient] = field(default_factory=dict)
    _exits: AsyncExitStack = field(default_factory=AsyncExitStack)

    def of(self, address: str) -> httpx.AsyncClient:
        if address not in self._clients:
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=self.keepalive,
                                  keepalive_expiry=KEEPALIVE_EXPIRY)
            transport = httpx.AsyncHTTPTransport(local_address=address, limits=limits, verify=_TLS)
            self._clients[address] = httpx.AsyncClient(transport=transport, timeout=self.timeout)
            self._exits.push_async_callback(self._clients[address].aclose)
        return self._clients[address]

    async def __aenter__(self) -> Clients:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._exits.aclose()
