"""The customers' pages (what's on, the seat map, my bookings), the door scanner and the operator's: plain HTML, CSS and
JavaScript (entrypoints/api/pages/), served as they are, no build step. They read everything else from the
public API and the stream."""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import APIRouter, Path
from fastapi.responses import Response
from fastapi.routing import APIRoute
from starlette.types import Scope
from ticketing.api.errors import not_found

from hold_service.domain.model import MAX_SHOWTIME_ID
from hold_service.entrypoints.api.deps import DepsDep
from hold_service.entrypoints.api.page_catalogues import catalogues_script

router = APIRouter(tags=["pages"], include_in_schema=False)
PAGES = FilePath(__file__).resolve().parents[1] / "pages"
MEDIA = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css"}
FILES = {path.name: (path.read_bytes(), MEDIA[path.suffix]) for path in PAGES.iterdir() if path.suffix in MEDIA}
FILES["catalogues.js"] = (catalogues_script(), MEDIA[".js"])  # the pages' languages (i18n.js), compiled here
ShowtimeId = Annotated[int, Path(ge=1, le=MAX_SHOWTIME_ID)]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def _page(name: str, deps: DepsDep) -> Response:
    body, media = FILES[name]
    # Calls to here, to payment-service (the checkout) and to the identity provider (discovery, tokens).
    connect = " ".join(filter(None, [deps.settings.payment_public_url, _origin(deps.settings.oidc_issuer_url)]))
    return Response(body, media_type=media, headers={
        "cache-control": "no-cache",
        # Scripts and styles from here only.
        "content-security-policy": f"default-src 'self'; connect-src 'self' {connect}; frame-ancestors 'none'",
    })


@router.get("/pages/", name="whats_on_page")
async def whats_on_page(deps: DepsDep) -> Response:
    return _page("whats-on.html", deps)


@router.get("/pages/bookings", name="bookings_page")
async def bookings_page(deps: DepsDep) -> Response:
    return _page("bookings.html", deps)


@router.get("/pages/showtimes/{showtime_id}", name="seat_map_page")
async def seat_map_page(showtime_id: ShowtimeId, deps: DepsDep) -> Response:
    return _page("seat-map.html", deps)


@router.get("/pages/door", name="door_page")
async def door_page(deps: DepsDep) -> Response:
    return _page("door.html", deps)


@router.get("/pages/door-sw.js", name="door_service_worker")
async def door_service_worker(deps: DepsDep) -> Response:
    """The scanner's service worker (it keeps the page for a scanner without the network), served beside the
    page so that its scope may cover it."""
    return _page("door-sw.js", deps)


@router.get("/pages/showtimes/{showtime_id}/operator", name="operator_page")
async def operator_page(showtime_id: ShowtimeId, deps: DepsDep) -> Response:
    return _page("operator.html", deps)


@router.get("/pages/assets/{name}", name="page_asset")
async def page_asset(name: str, deps: DepsDep) -> Response:
    if name not in FILES or name.endswith(".html"):
        raise not_found("file")
    return _page(name, deps)


@router.get("/pages/config.json", name="page_config")
async def page_config(deps: DepsDep) -> dict[str, str]:
    """What the pages need to know of the deployment: where checkout is (payment-service), and the identity
    provider they sign in with (empty: the dev path, a pasted token)."""
    s = deps.settings
    return {"paymentUrl": s.payment_public_url, "oidcIssuerUrl": s.oidc_issuer_url, "oidcClientId": s.oidc_client_id}


PATHS = [route.path for route in router.routes if isinstance(route, APIRoute)]


def in_memory(_: Scope) -> bool:
    """Every page is a file this process holds (the shedder serves them at any load)."""
    return True
