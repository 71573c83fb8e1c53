"""The chart's Ingress routes every public route of every service, and no private one: the routes come from the
services' committed OpenAPI documents (docs/api, current by tests/docs) and hold-service's pages (outside
OpenAPI), so a route added to a service is either routed by templates/ingress.yaml or named below as private,
with the reason. Each route is matched the way ingress-nginx matches regular-expression paths (anchored at the
start, case-insensitive, the longest path first) and must reach the Service of the API that serves it."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from deploy_support import REPO, by_kind, render
from hold_service.entrypoints.api.routes import pages

INGRESS = ["--set", "jwt.existingSecret=ticketing-jwt", "--set", "contacts.existingSecret=ticketing-contacts",
           "--set", "ingress.enabled=true",
           "--set", "ingress.controllerCidrs={10.42.0.0/16}"]
APIS = ("hold-service", "payment-service", "voucher-service")
# Not routed by the Ingress, on purpose (the same list is in ingress.yaml's comment and docs/deployment.md).
PRIVATE = {
    r"^/(healthz|readyz|metrics)$": "probes and Prometheus reach the pods themselves",
    r"^/admin/": "operators reach the Services from inside the cluster (kubectl port-forward)",
    r"^/vouchers/\{code\}/reservations": "payment-service's calls to voucher-service only",
    r"^/customer-ids$": "the other services' calls to hold-service only (a provider subject's customer id)",
    r"^/buyer-contacts/": "the notifier's calls to hold-service only (with CONTACTS_API_KEY)",
}


def public_routes() -> dict[tuple[str, str], str]:
    """(method, path template) -> the service that serves it, for every route not PRIVATE."""
    routes: dict[tuple[str, str], str] = {}
    for service in APIS:
        document = json.loads((REPO / "docs" / "api" / f"{service}.openapi.json").read_text())
        for path, operations in document["paths"].items():
            routes |= {(method.upper(), path): service for method in operations}
    for route in pages.router.routes:  # include_in_schema=False
        routes |= {(method, route.path): "hold-service" for method in route.methods}  # type: ignore[attr-defined]
    return {key: service for key, service in routes.items()
            if not any(re.search(private, key[1]) for private in PRIVATE)}


def ingress_paths(manifests: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(path regex, backend Service) of every Ingress rule, the longest first (ingress-nginx's order)."""
    paths = [(p["path"], p["backend"]["service"]["name"]) for ingress in by_kind(manifests, "Ingress").values()
             for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]]
    return sorted(paths, key=lambda p: -len(p[0]))


def reaches(paths: list[tuple[str, str]], path_template: str) -> str | None:
    """The Service a request for the path goes to (its parameters filled in), None if no rule takes it."""
    path = re.sub(r"\{[^}]+\}", "42", path_template)
    return next((backend for regex, backend in paths if re.match(regex, path, re.IGNORECASE)), None)


def misrouted(manifests: list[dict[str, Any]], routes: dict[tuple[str, str], str] | None = None) -> list[str]:
    paths = ingress_paths(manifests)
    wrong = [f"{method} {path} -> {reaches(paths, path)}, not ticketing-{service}-api"
             for (method, path), service in sorted((routes or public_routes()).items())
             if reaches(paths, path) != f"ticketing-{service}-api"]
    for service in APIS:
        document = json.loads((REPO / "docs" / "api" / f"{service}.openapi.json").read_text())
        wrong += [f"private {path} is routed" for path in document["paths"]
                  if any(re.search(p, path) for p in PRIVATE) and reaches(paths, path)]
    return wrong


@pytest.fixture(scope="module")
def manifests(helm: str) -> list[dict[str, Any]]:
    return render(helm, *INGRESS)


def test_every_public_route_reaches_its_service_and_no_private_one_is_routed(
        manifests: list[dict[str, Any]]) -> None:
    routes = public_routes()
    # The door scanner's routes, which the Ingress once left out.
    assert {("POST", "/checkins"), ("POST", "/checkins/batch"), ("GET", "/tickets/public-key")} <= set(routes)
    assert misrouted(manifests) == []


def test_a_route_left_out_of_the_ingress_is_caught(manifests: list[dict[str, Any]]) -> None:
    manifests = copy.deepcopy(manifests)
    for ingress in by_kind(manifests, "Ingress").values():
        for rule in ingress["spec"]["rules"]:
            rule["http"]["paths"] = [p for p in rule["http"]["paths"] if p["path"] != "/checkins"]
    assert misrouted(manifests) == ["POST /checkins -> None, not ticketing-hold-service-api",
                                    "POST /checkins/batch -> None, not ticketing-hold-service-api"]


def test_a_new_service_route_is_caught(manifests: list[dict[str, Any]]) -> None:
    routes = {**public_routes(), ("GET", "/refunds/{id}"): "payment-service"}
    assert misrouted(manifests, routes) == ["GET /refunds/{id} -> None, not ticketing-payment-service-api"]
