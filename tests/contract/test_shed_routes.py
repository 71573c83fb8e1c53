"""Each API's shedding table (SHED_ROUTES in its entrypoints/api/app.py, ticketing.api.shedding) names routes the
app serves, and the contract's order holds: seat-map reads first, then holds; gateway callbacks, checkouts, hold
extensions and a checkout's voucher reservation last; health, readiness and metrics never."""

from types import ModuleType

import pytest
from hold_service.entrypoints.api import app as hold
from hold_service.entrypoints.api.routes import pages
from payment_service.entrypoints.api import app as payment
from ticketing.api.limiter import Priority
from ticketing.api.shedding import COMMON_ROUTES, RouteTable
from voucher_service.entrypoints.api import app as voucher

SERVICES = {"hold-service": hold, "payment-service": payment, "voucher-service": voucher}


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_every_declared_priority_names_a_route_the_app_serves_and_shedding_is_on(name: str) -> None:
    module: ModuleType = SERVICES[name]
    app = module.get_application()  # building the app opens nothing: the lifespan does
    served = {(method.upper(), path) for path, ops in app.openapi()["paths"].items() for method in ops}
    served |= {("GET", path) for path in pages.PATHS}  # hold-service's pages, not in its OpenAPI
    assert [(r.method, r.path) for r in module.SHED_ROUTES if (r.method, r.path) not in served] == []
    assert app.state.limiter is not None and app.state.limiter.limit > 0  # on by default


def priority(module: ModuleType, method: str, path: str) -> Priority:
    return Priority(RouteTable([*COMMON_ROUTES, *module.SHED_ROUTES]).rule(method, path)[0])


def test_the_contracts_order() -> None:
    assert priority(hold, "GET", "/showtimes/42/seats") == Priority.BROWSE
    assert priority(hold, "GET", "/showtimes") == Priority.BROWSE
    assert priority(hold, "GET", "/queue/abc") == Priority.BROWSE
    assert priority(hold, "POST", "/showtimes/42/holds") == Priority.HOLD
    assert priority(hold, "POST", "/holds/0b6e/extend") == Priority.PAY
    assert priority(hold, "DELETE", "/holds/0b6e") == Priority.PAY  # a release gives seats back to the crowd
    assert priority(payment, "POST", "/payments/callback") == Priority.PAY
    assert priority(payment, "POST", "/holds/0b6e/checkout") == Priority.PAY
    assert priority(voucher, "POST", "/vouchers/FLASH/reservations") == Priority.PAY
    for module in SERVICES.values():
        for path in ("/healthz", "/readyz", "/metrics"):
            assert priority(module, "GET", path) == Priority.NEVER
