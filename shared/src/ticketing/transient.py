"""Which failures mean "a dependency is down or busy, try again": one list for the whole platform.

The API answers them 503 (never a bare 500), the consumers retry them for as long as it takes (the
message is fine, it never goes to a DLQ), the relay backs off. Everything else is a bug or bad data.
"""

from __future__ import annotations

import asyncpg

from ticketing.redis_client import REDIS_UNAVAILABLE

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    OSError, TimeoutError,  # refused, reset, timed out (asyncio.TimeoutError is TimeoutError)
    asyncpg.PostgresConnectionError, asyncpg.CannotConnectNowError, asyncpg.InterfaceError,
    asyncpg.TooManyConnectionsError, asyncpg.ConnectionDoesNotExistError, asyncpg.AdminShutdownError,
    asyncpg.exceptions.CrashShutdownError,  # the server restarts after a backend crashed
    asyncpg.exceptions.IdleSessionTimeoutError,
    # A failover: a connection that reached a node which is (or has just become) a standby.
    asyncpg.exceptions.ReadOnlySQLTransactionError,
    asyncpg.InternalClientError,  # a connection the server dropped mid-query, failing its reset on release
    # Not an outage but as transient: Postgres aborted the transaction to break a lock cycle; a retry succeeds.
    asyncpg.DeadlockDetectedError, asyncpg.SerializationError,
    *REDIS_UNAVAILABLE,  # a Redis Cluster failing over too
)

# The connection itself is gone or cannot be made (a restart, a failover, a cut): nothing the server did is known
# to the client beyond that, so a step that had sent nothing yet (BEGIN) may simply be tried again.
CONNECTION_LOST: tuple[type[BaseException], ...] = (
    OSError, asyncpg.PostgresConnectionError, asyncpg.CannotConnectNowError, asyncpg.InterfaceError,
    asyncpg.AdminShutdownError, asyncpg.exceptions.CrashShutdownError, asyncpg.exceptions.IdleSessionTimeoutError,
    asyncpg.InternalClientError,
)
