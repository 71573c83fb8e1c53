"""Every route's error answers in the OpenAPI document, in the contract's format (`{"error", "message", ...}`).

FastAPI documents what a route returns when all goes well and its own 422 body; ours are
`{"error": CODE, "message": ...}` for every status. Added to every operation, from what it is:
- 503 UNAVAILABLE and 431 HEADERS_TOO_LARGE, always (a dependency down; request headers over
  MAX_HEADER_BYTES); 413 PAYLOAD_TOO_LARGE where it takes a body;
- 422 VALIDATION_ERROR where it takes parameters or a body (replacing FastAPI's own body);
- 404 NOT_FOUND where its path names something;
- 401 UNAUTHORIZED and 403 FORBIDDEN where it needs a token (the `security` that ticketing.api.security's
  dependencies put in the document, or that a hot route declares in its `openapi_extra`).
Responses a route declares itself (409, 429, ...) get the same body and the codes of the contract.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["error", "message"], "additionalProperties": True,
    "properties": {"error": {"type": "string", "description": "A stable code (docs/api/README.md lists them)."},
                   "message": {"type": "string", "description": "For humans."}},
}
BEARER = {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
          "description": "Claims sub (customer id, ASCII digits), role (customer | admin | service), iss, aud, "
                         "exp. HS256 with JWT_SECRET (iss and aud `ticketing`), or, where JWT_JWKS_URL is set, "
                         "RS256, ES256 or EdDSA with the identity provider's key named by `kid` (iss JWT_ISSUER, "
                         "aud JWT_AUDIENCE)."}
CODES: dict[int, tuple[str, str]] = {
    401: ("UNAUTHORIZED", "No bearer token, or one that is invalid or expired."),
    403: ("FORBIDDEN | ADMISSION_REQUIRED", "A token of another role, or no admission while the waiting room is on."),
    404: ("NOT_FOUND", "Unknown, or another customer's (no existence oracle)."),
    409: ("SEATS_UNAVAILABLE | HOLD_NOT_ACTIVE | OUT_OF_STOCK | ALREADY_USED | SHOWTIME_EXISTS",
          "The state does not allow it (the body says which and why)."),
    413: ("PAYLOAD_TOO_LARGE", "The body is over MAX_BODY_BYTES; it was not read."),
    422: ("VALIDATION_ERROR | NOT_ELIGIBLE | IDEMPOTENCY_KEY_REUSED",
          "The request is not valid (`problems` lists where)."),
    429: ("RATE_LIMITED", "Too many requests: wait for the Retry-After header's seconds."),
    431: ("HEADERS_TOO_LARGE", "The request line and headers are over MAX_HEADER_BYTES; they were not read."),
    503: ("UNAVAILABLE", "A dependency is down; retry after the Retry-After header's seconds."),
}


def _error(status: int) -> dict[str, Any]:
    codes, description = CODES.get(status, ("", "An error."))
    return {"description": f"{codes}: {description}" if codes else description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _describe(operation: dict[str, Any]) -> None:
    responses: dict[str, Any] = operation.setdefault("responses", {})
    params = operation.get("parameters", [])
    wanted = {431, 503}
    if "requestBody" in operation:
        wanted |= {413, 422}
    if params:
        wanted.add(422)
    if any(p.get("in") == "path" for p in params):
        wanted.add(404)
    if operation.get("security"):
        wanted |= {401, 403}
    for status in wanted | {int(s) for s in responses if s.isdigit() and int(s) >= 400}:
        existing = responses.get(str(status), {})
        if status == 422 or not existing.get("content"):
            responses[str(status)] = {**_error(status), **({"headers": existing["headers"]}
                                                            if "headers" in existing else {})}


def describe_errors(app: FastAPI) -> None:
    """Replace `app.openapi` with one that documents every operation's errors (computed once)."""
    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=app.version, routes=app.routes, description=app.description)
        components = schema.setdefault("components", {})
        components.setdefault("schemas", {})["Error"] = ERROR_SCHEMA
        components.setdefault("securitySchemes", {})["bearer"] = BEARER
        for name in ("HTTPValidationError", "ValidationError"):
            components["schemas"].pop(name, None)
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                _describe(operation)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
