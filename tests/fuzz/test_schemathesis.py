"""Scenario S3 (docs/reliability.md): schema fuzzing of every service's OpenAPI with schemathesis.

For each real API process (see conftest.py) and each operation in its /openapi.json, schemathesis
generates valid (POSITIVE) and invalid (NEGATIVE) requests, sent with the right bearer token (admin for
/admin, service for voucher reservations, staff for the door, customer otherwise). Every response must:
- never be a 5xx other than the contract's 503 `UNAVAILABLE` (`no_server_error`). That one answer is
  allowed: a flash-sale voucher the fuzzer made keeps its gate shut (503) until the voucher writer, which
  does not run here, has caught up; any 500 or other 5xx is a bug;
- conform to the schema and media type where the schema declares them (`response_schema_conformance`,
  `content_type_conformance`);
- be an error in the contract's format, `{"error": CODE, "message": text, ...}`, for every 4xx (the apps do
  not declare their error bodies, so this is checked by hand).
Then a few valid requests per protected operation without a token must give 401 `UNAUTHORIZED`.

Every failing operation is collected (with a curl line to replay it) and the test fails listing them all;
nothing is filtered out. The number of cases sent is printed (`-s`) and recorded as a user property.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance
from ticketing_testing import merchant_auth

pytestmark = pytest.mark.integration

EXAMPLES = {GenerationMode.POSITIVE: 30, GenerationMode.NEGATIVE: 20}
UNAUTHENTICATED_EXAMPLES = 5
OPS_PATHS = {"/healthz", "/readyz", "/metrics"}
PUBLIC_PATHS = {"/showtimes", "/showtimes/{showtime_id}/seats", "/showtimes/{showtime_id}/seats/stream",
                "/tickets/public-key"}  # no token
# Fuzzed with a customer's token, but a visitor may call them without one (docs/waiting-room.md): not 401.
TOKEN_OPTIONAL_PATHS = {"/showtimes/{showtime_id}/waiting-room", "/showtimes/{showtime_id}/queue"}
DOOR_PATHS = {"/checkins", "/checkins/batch", "/showtimes/{showtime_id}/checkins"}  # door scanners (role staff)
# A successful Server-Sent Events response never ends, so it cannot be fuzzed as request and response: such an
# operation is fuzzed on generated ids (404, 422, answered at once) but not on the seeded showtime; its
# stream is tested in services/hold-service/tests/integration/seat_map.
ENDLESS_PATHS = {"/showtimes/{showtime_id}/seats/stream"}
TIMEOUT = 10.0
SERVICES = ["hold-service", "payment-service", "voucher-service", "gateway-simulator"]  # conftest.APIS


def no_server_error(ctx: Any, response: Any, case: Any) -> bool | None:
    if response.status_code < 500:
        return None
    try:
        code = response.json().get("error")
    except (ValueError, AttributeError):
        code = None
    assert response.status_code == 503 and code == "UNAVAILABLE", (
        f"server error {response.status_code}: {response.text[:300]!r}")
    return None


def error_format(ctx: Any, response: Any, case: Any) -> bool | None:
    """The contract (docs/api): every error is `{"error": CODE, "message": text, ...details}`. A request whose
    framing is not HTTP (a Content-Length that is not a number) is refused by the HTTP server before any of our
    code runs, as RFC 9112 (6.3) says it must be: 400 and the connection closed, in the server's own words."""
    if response.status_code < 400:
        return None
    if _unframed(case):
        assert response.status_code == 400, f"a request with a malformed Content-Length answered {response.status_code}"
        return None
    try:
        body = response.json()
    except ValueError:
        body = None
    ok = isinstance(body, dict) and isinstance(body.get("error"), str) and isinstance(body.get("message"), str)
    if str(getattr(getattr(case, "operation", None), "path", "")).startswith("/v1/") and isinstance(body, dict):
        # The simulator's Stripe API answers Stripe's error shape (as Stripe does), except where the platform's
        # own layers answer first (431, 503, 413).
        detail = body.get("error")
        ok = ok or (isinstance(detail, dict) and isinstance(detail.get("message"), str)
                    and isinstance(detail.get("type"), str))
    assert ok, f"{response.status_code} is not in the contract's error format: {response.text[:300]!r}"
    return None


def _unframed(case: Any) -> bool:
    length = next((v for k, v in (case.headers or {}).items() if k.lower() == "content-length"), None)
    return length is not None and not str(length).strip().isdigit()


CHECKS = [no_server_error, response_schema_conformance, content_type_conformance, error_format]


# The simulator's customer side (the hosted page and its test twin); the rest is the merchant's (its API key).
SIMULATOR_PUBLIC_PATHS = {"/pay/{session_id}", "/sim/sessions/{session_id}/pay"}


def headers_for(stack: Any, service: str, method: str, path: str, customer: int) -> dict[str, str]:
    if service == "gateway-simulator":
        return {} if path in OPS_PATHS | SIMULATOR_PUBLIC_PATHS else merchant_auth()
    role = role_for(service, method, path)
    return stack.bearer(role, customer) if role else {}  # type: ignore[no-any-return]


def role_for(service: str, method: str, path: str) -> str | None:
    """The token each operation is called with; None when it takes none."""
    if path in OPS_PATHS | PUBLIC_PATHS or path == "/payments/callback":
        return None
    if path.startswith("/admin/"):
        return "admin"
    if path in DOOR_PATHS:
        return "staff"
    if service == "voucher-service":  # reservations are payment-service's; quotes are a customer's
        return "customer" if path.endswith("/quote") else "service"
    return "customer"


def needs_auth(service: str, path: str) -> bool:
    # The gateway callback is authenticated by its signature: without one it must be 401 too.
    if service == "gateway-simulator":
        return path not in OPS_PATHS | SIMULATOR_PUBLIC_PATHS
    return path not in OPS_PATHS | PUBLIC_PATHS | TOKEN_OPTIONAL_PATHS


@dataclass
class Tally:
    cases: int = 0
    findings: list[str] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)


def _fuzz(operation: Any, base_url: str, headers: dict[str, str], mode: GenerationMode, tally: Tally,
          path: dict[str, str] | None = None) -> None:
    @given(case=operation.as_strategy(generation_mode=mode, path_parameters=path))
    @settings(max_examples=EXAMPLES[mode], deadline=None, database=None, derandomize=False,
              phases=[Phase.explicit, Phase.generate],  # no shrinking: a failing case can cost seconds
              suppress_health_check=list(HealthCheck))
    def run(case: Any) -> None:
        tally.cases += 1
        response = case.call(base_url=base_url, headers=headers, timeout=TIMEOUT)
        tally.statuses[response.status_code] += 1
        try:
            case.validate_response(response, checks=CHECKS)
        except BaseException as exc:
            raise AssertionError(f"{exc}\n  status {response.status_code}, body {response.text[:400]!r}\n"
                                 f"  replay: {case.as_curl_command(headers=headers)}") from None

    try:
        run()
    except Unsatisfiable:  # NEGATIVE mode on an operation without any input: nothing can be made invalid
        pass
    except Exception as exc:
        tally.findings.append(f"{operation.label} [{mode.value}{' on ' + str(path) if path else ''}]: {exc}")


def _unauthenticated(operation: Any, base_url: str, tally: Tally) -> None:
    @given(case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE))
    @settings(max_examples=UNAUTHENTICATED_EXAMPLES, deadline=None, database=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    def run(case: Any) -> None:
        tally.cases += 1
        response = case.call(base_url=base_url, timeout=TIMEOUT)
        tally.statuses[response.status_code] += 1
        try:
            body = response.json()
        except ValueError:
            body = {}
        ok = isinstance(body, dict) and body.get("error") == "UNAUTHORIZED" and "message" in body
        if str(operation.path).startswith("/v1/"):  # the simulator's Stripe API: Stripe's 401
            ok = isinstance(body, dict) and isinstance(body.get("error"), dict) and "message" in body["error"]
        assert response.status_code == 401 and ok, (
            f"without a token: {response.status_code} {response.text[:300]!r}\n  replay: {case.as_curl_command()}")

    try:
        run()
    except Exception as exc:
        tally.findings.append(f"{operation.label} [no token]: {exc}")


def seeded_path(operation: Any, seeds: dict[str, str]) -> dict[str, str] | None:
    names = [p.name for p in operation.path_parameters]
    return {n: seeds[n] for n in names} if names and all(n in seeds for n in names) else None


# Real resources made through the contract, so generated cases can hit existing ids (path parameters).
def _unique() -> int:
    return 10**9 + random.randrange(10**9)


def _post(client: httpx.Client, url: str, headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(url, headers=headers, json=body)
    assert response.status_code in (200, 201), f"seeding {url}: {response.status_code} {response.text}"
    return response.json()  # type: ignore[no-any-return]


def _seed_hold(client: httpx.Client, stack: Any, customer: int) -> dict[str, str]:
    hold_url, showtime = stack.urls["hold-service"], _unique()
    _post(client, f"{hold_url}/admin/showtimes", stack.bearer("admin"), {
        "showtimeId": showtime, "title": "Fuzz", "startsAt": "2031-01-01T20:00:00Z", "priceCents": 1000,
        "rows": {"A": 8, "B": 8}})
    hold = _post(client, f"{hold_url}/showtimes/{showtime}/holds", stack.bearer("customer", customer),
                 {"seats": ["A1", "A2"]})
    return {"showtime_id": str(showtime), "hold_id": hold["holdId"]}


def seed_hold_service(stack: Any, customer: int) -> dict[str, str]:
    with httpx.Client(timeout=TIMEOUT) as client:
        return _seed_hold(client, stack, customer)


def seed_payment_service(stack: Any, customer: int) -> dict[str, str]:
    with httpx.Client(timeout=TIMEOUT) as client:
        held = _seed_hold(client, stack, customer)
        headers = {**stack.bearer("customer", customer), "Idempotency-Key": f"fuzz-{_unique()}"}
        payment = _post(client, f"{stack.urls['payment-service']}/holds/{held['hold_id']}/checkout", headers, {})
        return {"hold_id": held["hold_id"], "payment_id": payment["paymentId"]}


def seed_voucher_service(stack: Any, customer: int) -> dict[str, str]:
    url, code, order = stack.urls["voucher-service"], f"FUZZ{_unique()}", str(uuid.uuid4())
    with httpx.Client(timeout=TIMEOUT) as client:
        _post(client, f"{url}/admin/vouchers", stack.bearer("admin"), {
            "code": code, "discountAmount": 100, "minOrderAmount": 0, "totalLimit": 1000, "perUserLimit": 1000,
            "startsAt": "2020-01-01T00:00:00Z", "endsAt": "2040-01-01T00:00:00Z", "flashSale": False})
        _post(client, f"{url}/vouchers/{code}/reservations", stack.bearer("service"),
              {"customerId": customer, "orderId": order, "orderAmount": 5000})
    return {"code": code, "order_id": order}


def seed_gateway_simulator(stack: Any, customer: int) -> dict[str, str]:
    url = stack.urls["gateway-simulator"]
    with httpx.Client(timeout=TIMEOUT) as client:
        r = client.post(f"{url}/v1/checkout/sessions", headers=merchant_auth(), data={
            "mode": "payment", "client_reference_id": str(uuid.uuid4()), "line_items[0][quantity]": "1",
            "line_items[0][price_data][currency]": "eur", "line_items[0][price_data][unit_amount]": "1000"})
        assert r.status_code == 200, r.text
    return {"session_id": r.json()["id"]}


SEEDERS = {"hold-service": seed_hold_service, "payment-service": seed_payment_service,
           "voucher-service": seed_voucher_service, "gateway-simulator": seed_gateway_simulator}


@pytest.mark.parametrize("service", SERVICES)
def test_schema_fuzzing(service: str, fuzz_stack: Any, record_property: Any) -> None:
    base_url = fuzz_stack.urls[service]
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json", timeout=TIMEOUT)
    customer = 10**12 + random.randrange(10**11)  # unique per run: tests share the database
    tally, operations = Tally(), 0
    seeds = SEEDERS[service](fuzz_stack, customer)
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        headers = headers_for(fuzz_stack, service, operation.method.upper(), operation.path, customer)
        known = None if operation.path in ENDLESS_PATHS else seeded_path(operation, seeds)
        for mode in EXAMPLES:
            _fuzz(operation, base_url, headers, mode, tally)
            if known:  # again on resources that exist, so the handlers past the 404 are reached too
                _fuzz(operation, base_url, headers, mode, tally, known)
        if needs_auth(service, operation.path):
            _unauthenticated(operation, base_url, tally)
    record_property("schemathesis_cases", tally.cases)
    print(f"\n[S3] {service}: {operations} operations, {tally.cases} cases, {len(tally.findings)} findings, "
          f"statuses {dict(sorted(tally.statuses.items()))}")
    assert not tally.findings, f"{service}: {len(tally.findings)} failing operations\n\n" + "\n\n".join(
        tally.findings)



def test_only_a_request_with_a_malformed_content_length_may_get_the_http_servers_own_400() -> None:
    class Answer:
        status_code, text = 400, "Invalid HTTP request received."

        def json(self) -> Any:
            raise ValueError("not JSON")

    class Case:
        headers: dict[str, str] = {"Content-Length": "M\tV+~-cTMka'bxH"}  # what found it in CI

    assert error_format(None, Answer(), Case()) is None
    Case.headers = {"Content-Length": "12"}
    with pytest.raises(AssertionError, match="not in the contract's error format"):
        error_format(None, Answer(), Case())
