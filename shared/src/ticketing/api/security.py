"""FastAPI dependencies for the bearer JWT, checked by `app.state.tokens` (ticketing.tokens).

They are `async def` on purpose: FastAPI runs a plain `def` dependency in its thread pool, which on the
hot path of every request costs more than verifying the token itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ticketing.api.errors import ApiError
from ticketing.auth import InvalidToken, Principal, Role


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, "UNAUTHORIZED", message, headers={"WWW-Authenticate": "Bearer"})


# Declared as a FastAPI security dependency so the OpenAPI document marks the routes that need a token;
# the token itself is read and checked below (cached), not by HTTPBearer.
_BEARER = Security(HTTPBearer(auto_error=False, scheme_name="bearer"))


async def current_principal(request: Request, _credentials: HTTPAuthorizationCredentials | None = _BEARER) -> Principal:
    """The caller, from the bearer token; 401 without a valid one."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise _unauthorized("a bearer token is required")
    try:
        return await request.app.state.tokens.verify(token.strip())  # type: ignore[no-any-return]
    except InvalidToken as exc:
        raise _unauthorized(f"invalid token: {exc}") from exc


def require_role(*roles: Role) -> Callable[[Request], Awaitable[Principal]]:
    async def check(request: Request, _credentials: HTTPAuthorizationCredentials | None = _BEARER) -> Principal:
        principal = await current_principal(request)
        if principal.role not in roles:
            # An authenticated caller of the wrong kind: say nothing about the resource.
            raise ApiError(403, "FORBIDDEN", f"this operation needs role {' or '.join(roles)}")
        return principal
    return check


AnyPrincipal = Annotated[Principal, Depends(current_principal)]
Customer = Annotated[Principal, Depends(require_role("customer"))]
Admin = Annotated[Principal, Depends(require_role("admin"))]
Staff = Annotated[Principal, Depends(require_role("staff"))]
StaffOrAdmin = Annotated[Principal, Depends(require_role("staff", "admin"))]
CustomerOrService = Annotated[Principal, Depends(require_role("customer", "service"))]
