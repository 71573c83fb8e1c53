"""On the stack `make up` started: hold-service limits holds per address as deployed, by the TCP peer.

    .venv/bin/python deploy/tests/peer_address_limit.py      (deploy/tests/readme_path.sh runs it after the demo)

From one loopback address of its own (Linux routes all of 127/8 to lo), HOLD_RATE_LIMIT_PER_IP_PER_MINUTE's
default (120) plus 10 hold requests, each by another customer (so the per-customer limit never decides) and
each with another X-Forwarded-For, as a client lying about its address would send them: the first 120 are
answered (201, then 409: one seat), the rest 429 RATE_LIMITED. Then one request from another address, whose
X-Forwarded-For names the spent one, is answered as usual: the header neither escapes the limit nor spends
another address's budget. Exit status 1 when make up does otherwise (a lifted limit, a believed header).
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import httpx
from dotenv import dotenv_values
from hold_service.config import HoldSettings
from ticketing.auth import issue_token

ROOT = Path(__file__).resolve().parents[2]
HOLD = "http://127.0.0.1:8001"
LIMIT = HoldSettings.model_fields["hold_rate_limit_per_ip_per_minute"].default
MORE = 10
# The sliding-window counter weighs the last minute's count; a burst that crosses into a new minute may be let
# one request further.
SLACK = 1


def loopback() -> str:
    """An address of a block no other client of the demo or the tests uses (127.200.0.0 to 127.250.255.255)."""
    return f"127.{random.randint(200, 250)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


def customer(secret: str) -> dict[str, str]:
    token = issue_token(secret, sub=str(random.randint(10**12, 10**13)), role="customer")
    return {"Authorization": f"Bearer {token}"}


def from_address(address: str) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), base_url=HOLD, timeout=10)


def main() -> int:
    env = {**{k: v for k, v in dotenv_values(ROOT / ".env").items() if v}, **os.environ}
    secret = env.get("JWT_SECRET", "dev-only-change-me")
    showtime = random.randint(10**12, 2 * 10**12)
    admin = {"Authorization": f"Bearer {issue_token(secret, sub='1', role='admin')}"}
    with httpx.Client(base_url=HOLD, timeout=10) as organizer:
        organizer.post("/admin/showtimes", headers=admin, json={
            "showtimeId": showtime, "title": "peer address probe", "startsAt": "2031-01-01T20:00:00Z",
            "priceCents": 1200, "rows": {"A": 1}}).raise_for_status()
    spoofer, other = loopback(), loopback()
    held: list[tuple[str, dict[str, str]]] = []
    statuses: list[int] = []
    with from_address(spoofer) as client:
        for _ in range(LIMIT + MORE):
            who = customer(secret)
            r = client.post(f"/showtimes/{showtime}/holds", json={"seats": ["A1"]},
                            headers={**who, "X-Forwarded-For": loopback()})
            statuses.append(r.status_code)
            if r.status_code == 201:
                held.append((r.json()["holdId"], who))
            if r.status_code == 429 and r.json().get("error") != "RATE_LIMITED":
                statuses[-1] = -1
    with from_address(other) as client:
        framed = client.post(f"/showtimes/{showtime}/holds", json={"seats": ["A1"]},
                             headers={**customer(secret), "X-Forwarded-For": spoofer}).status_code
        for hold_id, who in held:
            client.delete(f"/holds/{hold_id}", headers=who)
    answered = next((n for n, status in enumerate(statuses) if status == 429), len(statuses))
    problems = []
    if not LIMIT <= answered <= LIMIT + SLACK or set(statuses[:answered]) - {201, 409}:
        problems.append(f"{answered} requests answered before the first 429 (expected {LIMIT}): "
                        f"{sorted(set(statuses[:answered]))}")
    if set(statuses[answered:]) != {429}:
        problems.append(f"after the first 429: {statuses[answered:]} (expected only 429 RATE_LIMITED)")
    if framed not in (201, 409):
        problems.append(f"another address, naming {spoofer} in X-Forwarded-For, got {framed}")
    if problems:
        print("peer-address-limit: FAILED: " + "; ".join(problems), file=sys.stderr)
        return 1
    print(f"peer-address-limit: from {spoofer}, {answered} holds answered (201/409) then {len(statuses) - answered} "
          f"x 429 RATE_LIMITED, each with another X-Forwarded-For; {other} naming {spoofer} in the header: "
          f"{framed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
