"""The voucher API in-process (real app, lifespan and all) and the tokens tests call it with."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from ticketing.auth import issue_token
from voucher_service.config import VoucherSettings
from voucher_service.entrypoints.api.app import get_application
from voucher_testkit import TEST_PREFIX, unique_code

SECRET = "test-secret-" + "x" * 32


async def api_client(voucher_dsn: str, kafka_bootstrap: str, redis_url: str,
                     **settings: Any) -> AsyncIterator[httpx.AsyncClient]:
    config = VoucherSettings(database_url=voucher_dsn, jwt_secret=SECRET, redis_url=redis_url,
                             kafka_bootstrap_servers=kafka_bootstrap, kafka_group_prefix=TEST_PREFIX, **settings)
    app = get_application(config)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://voucher") as client:
            yield client


def auth(sub: int | str, role: str = "customer") -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(SECRET, sub=str(sub), role=role)}"}  # type: ignore[arg-type]


ADMIN, SERVICE = auth(1, "admin"), auth(2, "service")


def voucher_body(code: str, **kw: Any) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {"code": code, "discountAmount": 700, "minOrderAmount": 1000, "totalLimit": 2, "perUserLimit": 1,
            "startsAt": (now - timedelta(hours=1)).isoformat(), "endsAt": (now + timedelta(hours=1)).isoformat(),
            "flashSale": False, **kw}


async def create(api: httpx.AsyncClient, **kw: Any) -> str:
    code = unique_code("A")
    response = await api.post("/admin/vouchers", json=voucher_body(code, **kw), headers=ADMIN)
    assert response.status_code == 201, response.text
    return code
