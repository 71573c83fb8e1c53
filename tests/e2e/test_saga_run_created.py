"""How the fault runs create an operator's showtimes and vouchers (saga_run._created), on hand-made answers (no
infrastructure): a creation that answers "exists already" after an earlier delivery was committed is taken as
created only when the thing exists as asked, and a creation with no answer at all is asked again. The R16 cluster
run met voucher-service's 422 for it when only hold-service's 409 was taken, and a dropped connection when an
instance was killed as a wave opened."""

from __future__ import annotations

import httpx
import pytest

from .saga_run import _created

URL, EXISTING = "http://voucher/admin/vouchers", "http://voucher/admin/vouchers/JX"
BODY = {"code": "JX", "totalLimit": 2}
EXISTS = {"error": "VALIDATION_ERROR", "message": "voucher JX exists already"}


def client(posts: list[httpx.Response | Exception], found: httpx.Response) -> tuple[httpx.AsyncClient, list[str]]:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.method)
        if request.method != "POST":
            return found
        posted = posts.pop(0)
        if isinstance(posted, Exception):
            raise posted
        return posted

    return httpx.AsyncClient(transport=httpx.MockTransport(answer)), seen


@pytest.mark.parametrize("status", [409, 422])
async def test_exists_already_after_a_503_is_created_when_it_exists_as_asked(status: int) -> None:
    unavailable = httpx.Response(503, headers={"Retry-After": "0"}, json={"error": "UNAVAILABLE", "message": "x"})
    http, seen = client([unavailable, httpx.Response(status, json=EXISTS)], httpx.Response(200, json=BODY))
    async with http:
        await _created(http, URL, {}, BODY, EXISTING, BODY)
    assert seen == ["POST", "POST", "GET"]


async def test_no_answer_is_asked_again_and_exists_already_then_is_created() -> None:
    """The R16 run's hold-service instance killed with an operator's POST in flight: HAProxy does not send a POST
    without an Idempotency-Key to the other instance, so the connection is dropped with no answer."""
    dropped = httpx.RemoteProtocolError("Server disconnected without sending a response.")
    http, seen = client([dropped, httpx.Response(409, json=EXISTS)], httpx.Response(200, json=BODY))
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
