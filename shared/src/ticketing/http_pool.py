"""How our services keep their HTTP connections to each other and to the gateway.

An idle connection is used again for at most KEEPALIVE_SECONDS: less than uvicorn's keep-alive (5 s), which
is also httpx's own default expiry. With the two equal, a call could leave on a connection at the moment the
server closes it; it would end in a ReadError with no answer, and the caller would answer 503 for nothing.
"""

from __future__ import annotations

import httpx

KEEPALIVE_SECONDS = 2.0
LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20,  # httpx's defaults
                      keepalive_expiry=KEEPALIVE_SECONDS)
