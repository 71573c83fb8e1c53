"""How the fault runs create an operator's showtimes and vouchers (saga_run._created), on hand-made answers (no
infrastructure): a creation that answers "exists already" after an earlier delivery was committed is taken as
created only when the thing exists as asked. The R16 cluster run met voucher-service's 422 for it when only
hold-service's 409 was taken."""

from __future__ import annotations

import httpx
import pytest

from .saga_run import _created

URL, EXISTING = "http://voucher/admin/vouchers", "http://voucher/admin/vouchers/JX"
BODY = {"code": "JX", "totalLimit": 2}
EXISTS = {"error": "VALIDATION_ERROR", "message": "voucher JX exists already"}


def client(posts: list[httpx.Response], found: httpx.Response) -> tuple[httpx.AsyncClient, list[str]]:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.method)
        return posts.pop(0) if request.method == "POST" else found

    return httpx.AsyncClient(transport=httpx.MockTransport(answer)), seen


@pytest.mark.parametrize("status", [409, 422])
async def test_exists_already_after_a_503_is_created_when_it_exists_as_asked(status: int) -> None:
    unavailable = httpx.Response(503, headers={"Retry-After": "0"}, json={"error": "UNAVAILABLE", "message": "x"})
    http, seen = client([unavailable, httpx.Response(status, json=EXISTS)], httpx.Response(200, json=BODY))
    async with http:
        await _created(http, URL, {}, BODY, EXISTING, BODY)
    assert seen == ["POST", "POST", "GET"]


async def test_exists_already_as_someone_elses_fails_the_run() -> None:
    http, _ = client([httpx.Response(422, json=EXISTS)], httpx.Response(200, json={**BODY, "totalLimit": 9}))
    async with http:
        with pytest.raises(AssertionError):
            await _created(http, URL, {}, BODY, EXISTING, BODY)


async def test_another_refusal_fails_the_run() -> None:
    http, _ = client([httpx.Response(422, json={"error": "VALIDATION_ERROR", "message": "endsAt before startsAt"})],
                     httpx.Response(200, json=BODY))
    async with http:
        with pytest.raises(AssertionError):
            await _created(http, URL, {}, BODY, EXISTING, BODY)
