"""Load shedding on a real port (ticketing.api.shedding): hold-service under uvicorn, filled to its holds' share
of SHED_MAX_IN_FLIGHT by hold requests whose bodies have not all arrived (each stays in flight until its last
byte), refuses reads and holds at once with the contract's 503, serves the payment path, the seat map it holds
in memory and its health, and serves everyone again once the slots are free. Here beside the seat-map tests for
their server on a real port (`serve`)."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import orjson
import pytest

pytestmark = pytest.mark.integration


async def unfinished_hold(url: str, sid: int, token: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    """A hold request whose head is sent and whose body is not: (reader, writer, the rest of the body)."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    body = orjson.dumps({"seats": ["A1"]})
    writer.write(f"POST /showtimes/{sid}/holds HTTP/1.1\r\nHost: t\r\nAuthorization: {token}"
                 f"\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body[:1])
    await writer.drain()
    return reader, writer, body[1:]


async def finish(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, rest: bytes) -> int:
    writer.write(rest)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    writer.close()
    return status


async def test_past_the_limit_reads_and_holds_get_503_and_the_payment_path_is_served(serve, h) -> None:
    # Limit 4: reads admitted under 2 in flight, holds under 3, the payment path under 4.
    async with serve(shed_max_in_flight=4, shed_queue_timeout_ms=0) as app, \
            httpx.AsyncClient(base_url=app.url, timeout=10) as c:
        sids = [h.new_id(), h.new_id(), h.new_id(), h.new_id()]
        for sid in sids:
            r = await c.post("/admin/showtimes", headers=h.auth(1, "admin"), json={
                "showtimeId": sid, "title": "Rush", "startsAt": "2030-01-01T20:00:00Z", "priceCents": 900,
                "rows": {"A": 5}})
            assert r.status_code == 201, r.text
        assert (await c.get(f"/showtimes/{sids[0]}/seats")).status_code == 200  # now in this process' memory
        limiter = app.app.state.limiter
        held = [await unfinished_hold(app.url, sid, h.auth(h.new_id())["Authorization"]) for sid in sids[1:]]
        while limiter.in_flight < 3:
            await asyncio.sleep(0.005)

        catalogue = await c.get("/showtimes")
        assert catalogue.status_code == 503 and catalogue.headers["retry-after"] == "1"
        assert catalogue.json()["error"] == "UNAVAILABLE"
        assert (await c.get(f"/showtimes/{sids[1]}/seats")).status_code == 503  # not in memory: a load
        assert (await c.post(f"/showtimes/{sids[0]}/holds", json={"seats": ["A4"]},
                             headers=h.auth(h.new_id()))).status_code == 503
        cached = await c.get(f"/showtimes/{sids[0]}/seats")
        assert cached.status_code == 200 and len(cached.json()["seats"]) == 5
        assert (await c.get(f"/holds/{uuid.uuid4()}", headers=h.auth(2, "service"))).status_code == 404  # not shed
        for path in ("/healthz", "/readyz?check=postgres", "/metrics"):
            assert (await c.get(path)).status_code == 200, path
        shed = (await c.get("/metrics")).text
        assert ('ticketing_http_requests_shed_total{priority="browse",route="/showtimes",service="hold-service"} 1.0'
                in shed)

        assert sorted([await finish(*h) for h in held]) == [201, 201, 201]
        assert (await c.get("/showtimes")).status_code == 200
        assert limiter.in_flight == 0
