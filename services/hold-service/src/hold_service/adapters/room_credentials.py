"""Queue tickets and admission tokens, both signed with keys derived from JWT_SECRET.

A ticket is `base64url(showtime, customer, joined µs, nonce) . base64url(HMAC-SHA256[:16])`: opaque to the
customer, unforgeable (128-bit tag), and it carries the place it was given, so after Redis lost the queue
the customer's next poll puts him back where he was (adapters/lua/room_poll.lua).

An admission token is a JWT (HS256, RFC 8725: algorithm pinned, iss/aud/exp required) with its own audience
and a `purpose` claim, so it is never taken for a bearer token nor a bearer token for it; bound to customer
(`sub`), showtime (`sid`) and the slot it was given (`slot`, the slot's end in ms; `exp` is that too).
Verified tokens are remembered by their text until their own expiry (the hold path checks one per request).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

import jwt
from ticketing.auth import ALGORITHM, ISSUER

from hold_service.domain.waiting_room import AdmissionPass, Ticket
from hold_service.service_layer.room_ports import Credentials

ADMISSION_AUDIENCE = "ticketing-admission"
PURPOSE = "admission"
MAX_REMEMBERED = 20_000


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SignedCredentials(Credentials):
    def __init__(self, secret: str) -> None:
        self._ticket_key = hmac.new(secret.encode(), b"waiting-room ticket", hashlib.sha256).digest()
        self._token_key = hmac.new(secret.encode(), b"waiting-room admission", hashlib.sha256).digest()
        self._verified: dict[str, AdmissionPass] = {}

    def ticket(self, ticket: Ticket) -> str:
        body = f"{ticket.showtime_id}:{ticket.customer_id}:{ticket.joined_us}:{ticket.nonce}".encode()
        return f"{_b64(body)}.{_b64(self._tag(body))}"

    def read_ticket(self, text: str) -> Ticket | None:
        body_text, _, tag_text = text.partition(".")
        try:
            body, tag = _unb64(body_text), _unb64(tag_text)
        except ValueError:  # binascii.Error is a ValueError; so is a non-ASCII text
            return None
        if not hmac.compare_digest(tag, self._tag(body)):
            return None
        showtime, customer, joined, nonce = body.decode().split(":")  # ours, so well formed
        return Ticket(showtime_id=int(showtime), customer_id=int(customer), nonce=nonce, joined_us=int(joined))

    def _tag(self, body: bytes) -> bytes:
        return hmac.new(self._ticket_key, body, hashlib.sha256).digest()[:16]

    def admission_token(self, admission: AdmissionPass) -> str:
        claims = {"iss": ISSUER, "aud": ADMISSION_AUDIENCE, "purpose": PURPOSE, "sub": str(admission.customer_id),
                  "sid": admission.showtime_id, "slot": admission.slot_ms, "exp": admission.slot_ms // 1000}
        return jwt.encode(claims, self._token_key, algorithm=ALGORITHM)

    def read_admission_token(self, text: str) -> AdmissionPass | None:
        known = self._verified.get(text)
        if known is not None:
            if time.time() * 1000 < known.slot_ms - known.slot_ms % 1000:  # exp is the slot's end, in s
                return known
            del self._verified[text]
            return None
        try:
            claims = jwt.decode(text, self._token_key, algorithms=[ALGORITHM], audience=ADMISSION_AUDIENCE,
                                issuer=ISSUER, options={"require": ["exp", "sub", "aud", "iss", "sid", "slot"]})
        except jwt.PyJWTError:
            return None
        sub, sid, slot = claims.get("sub"), claims.get("sid"), claims.get("slot")
        if claims.get("purpose") != PURPOSE or not (isinstance(sub, str) and sub.isdecimal()):
            return None
        if not (isinstance(sid, int) and isinstance(slot, int)):
            return None
        admission = AdmissionPass(customer_id=int(sub), showtime_id=sid, slot_ms=slot)
        if len(self._verified) >= MAX_REMEMBERED:
            self._verified.pop(next(iter(self._verified)))  # the oldest entry
        self._verified[text] = admission
        return admission
