"""Every route of every service says in its OpenAPI document how it fails, in the contract's error format,
and the gateway's callback is described fully (body and signature header) for a gateway integrator."""

import pytest
from gateway_simulator.app import get_application as simulator
from hold_service.entrypoints.api.app import get_application as hold
from payment_service.entrypoints.api.app import get_application as payment
from voucher_service.entrypoints.api.app import get_application as voucher

APPS = {"hold-service": hold, "payment-service": payment, "voucher-service": voucher, "gateway-simulator": simulator}


def operations(schema: dict) -> list[tuple[str, str, dict]]:
    return [(path, method, op) for path, ops in schema["paths"].items() for method, op in ops.items()]


@pytest.mark.parametrize("name", sorted(APPS))
def test_every_operation_documents_its_errors_in_the_contracts_format(name: str) -> None:
    schema = APPS[name]().openapi()  # building the app opens nothing: the lifespan does
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    for path, method, op in operations(schema):
        responses = op["responses"]
        assert {"431", "503"} <= set(responses), (path, method)
        if "requestBody" in op:
            assert {"413", "422"} <= set(responses), (path, method)
        if any(p["in"] == "path" for p in op.get("parameters", [])):
            assert "404" in responses, (path, method)
        stripe = name == "gateway-simulator" and path.startswith("/v1/")  # Stripe's API answers Stripe's errors
        for status, response in responses.items():
            if int(status) >= 400:
                documented = response["content"]["application/json"]["schema"]
                if stripe and status in ("400", "401", "402", "404"):
                    assert documented == {"$ref": "#/components/schemas/StripeErrorBody"}, (path, status)
                else:
                    assert documented == {"$ref": "#/components/schemas/Error"}, (path, method, status)
        if op.get("security"):
            assert {"401", "403"} <= set(responses), (path, method)


def test_routes_that_need_a_token_say_so() -> None:
    documented = {(path, method) for path, method, op in operations(hold().openapi()) if op.get("security")}
    assert {("/showtimes/{showtime_id}/holds", "post"), ("/holds/{hold_id}", "get"),
            ("/holds/{hold_id}", "delete"), ("/admin/showtimes", "post")} <= documented
    assert ("/healthz", "get") not in documented
    reservations = voucher().openapi()["paths"]["/vouchers/{code}/reservations"]["post"]
    assert reservations["security"] == [{"bearer": []}]
    gateway = {(path, method): op.get("security") for path, method, op in operations(simulator().openapi())}
    assert {k for k, v in gateway.items() if v} == {  # the merchant's API key; the customer's page needs none
        ("/v1/checkout/sessions", "post"), ("/v1/checkout/sessions/{session_id}", "get"),
        ("/v1/checkout/sessions/{session_id}/expire", "post"), ("/v1/refunds", "post"), ("/sim/sessions", "get"),
        ("/sim/refunds/refuse", "post"),
        ("/sim/sessions/{session_id}/deliveries", "get")}
    stream = hold().openapi()["paths"]["/showtimes/{showtime_id}/seats/stream"]["get"]["responses"]
    assert "Retry-After" in stream["429"]["headers"]  # SEAT_MAP_MAX_STREAMS_PER_ADDRESS


def test_the_gateway_callback_is_described_for_an_integrator() -> None:
    op = payment().openapi()["paths"]["/payments/callback"]["post"]
    header = next(p for p in op["parameters"] if p["name"] == "Stripe-Signature")
    assert header["in"] == "header" and header["required"] and "HMAC-SHA256" in header["description"]
    body = op["requestBody"]["content"]["application/json"]["schema"]
    assert {"id", "type", "created", "data"} <= set(body["properties"])
    assert "401" in op["responses"] and "413" in op["responses"]
