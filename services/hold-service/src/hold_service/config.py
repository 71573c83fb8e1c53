"""hold-service settings: the only place that reads the environment."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import NoDecode
from ticketing.settings import DEV_DEFAULT_SECRET, TokenSettings
from ticketing.tickets import DEV_QR_SIGNING_KEY, InvalidTicket, TicketKeyring, private_key_from_seed, public_key_text


class HoldSettings(TokenSettings):
    """Each setting's docstring is its meaning in docs/configuration.md (generated from this class)."""

    service_name: str = "hold-service"
    """The name in logs, metrics and traces."""
    database_url: str = Field(
        default="postgresql://postgres@127.0.0.1:5432/ticketing",
        validation_alias=AliasChoices("HOLD_DATABASE_URL", "DATABASE_URL"),
    )
    """hold-service's database (its role sees only its own schema, `hold`)."""
    hold_ttl_seconds: float = Field(default=600, gt=0)
    """How long a hold keeps its seats while the customer pays; then they are free again (lazily: no job is
    needed for that)."""
    hold_max_seconds: float = Field(default=1200, gt=0)
    """A hold lasts at most this long from its creation, extensions included (POST /holds/{id}/extend, at
    checkout: to the payment session's end + its grace)."""
    sweep_interval_seconds: float = Field(default=15, gt=0)
    """How often the sweeper records the holds whose time has passed (SeatsReleased, EXPIRED), so that the
    seat map shows their seats free."""
    sweep_batch_size: int = Field(default=500, ge=1)
    """Expired holds the sweeper ends in one statement (its own transaction): larger batches end more holds a
    second, but hold their showtimes' rows a little longer at their commit."""
    sweep_max_batches: int = Field(default=40, ge=1)
    """Statements one sweep may run while expired holds remain (SWEEP_BATCH_SIZE each); what is left waits for
    the next sweep, so that a huge backlog never keeps the sweeper from its other work."""
    hold_rate_limit_per_minute: int = Field(default=5, ge=1)
    """Hold requests a customer may make per minute; past it 429 with Retry-After."""
    max_seats_per_hold: int = Field(default=8, ge=1)
    """Seats one hold may take."""
    max_seats_held_per_customer_showtime: int = Field(default=8, ge=1)
    """Seats one customer may hold at once in one showtime, over all his live holds."""
    seat_gate_enabled: bool = True
    """Whether the Redis seat gate refuses holds on seats it knows taken before they reach PostgreSQL (which
    decides either way)."""
    redis_socket_timeout_seconds: float = Field(default=0.2, gt=0)
    """How long a hold waits for Redis before it goes on without it (PostgreSQL decides alone)."""
    redis_retry_after_seconds: float = Field(default=1.0, ge=0)
    """After a Redis failure Redis is skipped this long: a dead Redis costs one timeout, not one per request."""
    idempotency_retention_hours: float = Field(default=24, ge=24)
    """How long an Idempotency-Key of a hold request is remembered (its answer replayed)."""
    http_host: str = "127.0.0.1"
    """The address the API listens on."""
    http_port: int = 8001
    """The API's port."""

    seat_map_numbering_seconds: float = Field(default=0.1, gt=0)
    """How often each process numbers the seat-map changes still without a version (they get it after their
    COMMIT: docs/seat-map.md); a process numbers its own holds' changes at once."""
    seat_map_showtimes: int = Field(default=2000, ge=1)
    """Seat maps an API process keeps in memory; past it the least read one that no stream follows goes."""
    seat_map_missing_seconds: float = Field(default=1.0, ge=0)
    """How long an API process answers 404 from memory for a showtime it did not find."""
    seat_map_stale_seconds: float = Field(default=2.0, gt=0)
    """How long maps are served while the process has lost the feed of seat changes; then they are read from
    PostgreSQL (the contract's staleness)."""
    seat_map_stream_buffer_bytes: int = Field(default=256 * 1024, ge=4096)
    """Bytes a seat-map stream may have waiting for a slow client; past it the stream is dropped."""
    seat_map_stream_send_timeout_seconds: float = Field(default=30.0, gt=0)
    """A stream whose write is stuck this long is dropped."""
    seat_map_heartbeat_seconds: float = Field(default=15.0, gt=0)
    """How often an idle seat-map stream gets a comment line, so proxies keep it open."""
    seat_map_stream_flush_seconds: float = Field(default=0.1, ge=0)
    """Changes this close together go to a stream in one write."""
    seat_map_max_streams: int = Field(default=20000, ge=1)
    """Seat-map streams an API process serves at once; past it a new stream gets 503."""
    seat_map_cache_seconds: int = Field(default=0, ge=0, le=2)
    """How long a proxy or CDN in front may serve the public seat map without asking again (`Cache-Control:
    public, max-age=N`, with the ETag); 0: every client revalidates (`no-cache`). At most 2: the map may be 2 s
    stale, and a proxy's copy adds to the staleness of this process's own."""
    seat_map_max_streams_per_address: int = Field(default=8, ge=1)
    """Seat-map streams one client address (the peer, or X-Forwarded-For from TRUSTED_PROXIES) may hold open
    at once, over every API process; past it 429."""
    payment_public_url: str = ""
    """payment-service's public base URL, where the customer page checks out; empty: the page's own origin
    (one ingress routing /holds/{id}/checkout and /payments/* there). payment-service must allow the page's
    origin (its CORS_ALLOWED_ORIGINS)."""

    sales_close_minutes_before_start: float = Field(default=0, ge=0)
    """Sales of a showtime close this long before its start: then a hold, a checkout (its hold's extension)
    and a queue join are refused with 409 SHOWTIME_CLOSED."""
    cancellation_deadline_minutes: float = Field(default=60, ge=0)
    """A customer may cancel a booking until this long before its showtime starts; then 409
    CANCELLATION_CLOSED."""
    qr_signing_key: str = DEV_QR_SIGNING_KEY
    """base64 of the 32-byte Ed25519 private seed tickets are signed with (a secret): the same key as the
    notifier's, so that GET /bookings gives each booked booking the ticket text its e-mail's QR code holds, and
    the key the door verifies them with. A ticket names its key by id (a digest of the public key)."""
    qr_verify_keys: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """The public keys of retired QR signing keys (base64url of the 32 raw bytes, comma-separated; the notifier's
    `tickets public-key` command prints a key's): after a rotation of QR_SIGNING_KEY the tickets already sent
    still admit at the door, and GET /tickets/public-key lists these keys beside the current one."""
    checkin_opens_minutes: float = Field(default=60, ge=0)
    """The door admits a showtime's tickets from this long before its start (earlier: 409 TOO_EARLY) until its
    end (start + duration; then 409 CHECKIN_CLOSED)."""
    checkin_batch_max_scans: int = Field(default=100, ge=1, le=1000)
    """Scans one POST /checkins/batch may carry (more: 422); a scanner back online sends its queue in parts of
    this size (100 scans fit the default MAX_BODY_BYTES)."""
    checkin_clock_skew_seconds: float = Field(default=120, ge=0)
    """How far in the future an offline scan's `at` may be (a scanner's clock ahead of ours); further: that
    scan is refused (VALIDATION_ERROR), the others are decided."""
    currency: str = Field(default="EUR", pattern=r"^[A-Z]{3}$")
    """The currency of the prices (ISO 4217, upper case) of a showtime created without one of its own; shown
    with every amount (seat map, what's on, bookings) and carried by the events that carry money."""
    catalogue_cache_seconds: float = Field(default=2.0, ge=0)
    """How long an API process serves one answer of GET /showtimes from memory before asking Postgres
    again (the catalogue may be this stale)."""
    catalogue_page_size: int = Field(default=500, ge=1, le=5000)
    """Showtimes in one answer of GET /showtimes; when more start in the window, the answer's `next` is the
    address of the following page."""
    hold_rate_limit_per_ip_per_minute: int = Field(default=120, ge=1)
    """Hold requests and queue joins per client address per minute; past it 429."""
    waiting_room_anonymous_joins_per_ip_per_minute: int = Field(default=10, ge=1)
    """Queue joins without a customer's token (a visitor not signed in yet) per client address per minute,
    counted apart from and on top of HOLD_RATE_LIMIT_PER_IP_PER_MINUTE; past it 429."""
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Peers whose X-Forwarded-For is believed, addresses or CIDRs, comma-separated; none: the TCP peer is the
    client's address."""
    admission_token_ttl_seconds: float = Field(default=180, gt=0)
    """How long a customer let in by a waiting room keeps his slot and his admission token."""
    waiting_room_step_seconds: float = Field(default=0.25, gt=0)
    """How often a waiting room lets customers in (taken by whichever API process a poll reaches)."""
    waiting_room_abandon_seconds: float = Field(default=30, gt=0)
    """A queued customer who has not polled for this long is dropped when his turn comes; an admitted one who
    has not come for his token in this time loses the slot."""
    waiting_room_cache_seconds: float = Field(default=1.0, ge=0)
    """How old a process's view of a room's configuration may be (how long an operator's change takes to be
    seen everywhere)."""
    waiting_room_redis_timeout_seconds: float = Field(default=1.0, gt=0)
    """The waiting room's own Redis timeout (its queue calls; holds keep REDIS_SOCKET_TIMEOUT_SECONDS)."""
    waiting_room_auto_default: bool = True
    """A showtime no operator configured gets a waiting room in the automatic mode with the defaults below
    (false: such a showtime has no room, as before the automatic mode)."""
    waiting_room_auto_active_limit: int = Field(default=200, ge=1, le=100_000)
    """The active limit of a room that opened itself, unless its operator set one."""
    waiting_room_auto_open_at_arrivals_per_minute: int = Field(default=1000, ge=1)
    """An automatic room opens when this many customers new to the showtime came in the last minute."""
    waiting_room_auto_open_at_active: int = Field(default=400, ge=1)
    """... or when this many customers were active at the showtime at once (seen within one slot's length,
    ADMISSION_TOKEN_TTL_SECONDS)."""
    waiting_room_auto_close_after_seconds: float = Field(default=120, gt=0)
    """An automatic room closes once its rush has been over this long: both figures below their thresholds and
    nobody left in its queue (or the showtime sold out)."""
    waiting_room_auto_check_seconds: float = Field(default=5, gt=0)
    """How often the worker's `rooms` role looks at the open automatic rooms (to close them)."""

    oidc_issuer_url: str = ""
    """The identity provider the pages sign customers and staff in with (OpenID Connect discovery from
    <issuer>/.well-known/openid-configuration; Keycloak: https://<host>/realms/<realm>); empty: the pages take a
    pasted token (the dev path, `make token`). The APIs check its tokens through JWT_JWKS_URL."""
    oidc_client_id: str = ""
    """The pages' client at the identity provider: a public client (no secret) with the authorization code flow,
    PKCE and the pages' addresses as redirect URIs."""
    contacts_api_key: str = ""
    """The key the notifier sends (X-Api-Key) to read a booking's buyer contact, GET /buyer-contacts/{bookingId}
    (a secret, at least 32 characters outside dev; the notifier's CONTACTS_API_KEY); empty: that route answers
    404 and ticket e-mails go only to the notifier's directory."""

    def secrets(self) -> dict[str, str]:
        key = DEV_DEFAULT_SECRET if self.qr_signing_key == DEV_QR_SIGNING_KEY else self.qr_signing_key
        contacts = {"CONTACTS_API_KEY": self.contacts_api_key} if self.contacts_api_key else {}
        return {**super().secrets(), "QR_SIGNING_KEY": key, **contacts}

    @field_validator("qr_verify_keys", mode="before")
    @classmethod
    def _verify_keys(cls, value: object) -> object:
        if isinstance(value, str):
            value = [k.strip() for k in value.split(",") if k.strip()]
        try:
            TicketKeyring.of(DEV_QR_SIGNING_KEY, value if isinstance(value, list) else [])
        except InvalidTicket as exc:  # refused at start, not at the door
            raise ValueError(f"QR_VERIFY_KEYS: {exc}") from exc
        return value

    @model_validator(mode="after")
    def _no_dev_ticket_key_outside_dev(self) -> HoldSettings:
        if self.app_env != "dev" and public_key_text(private_key_from_seed(DEV_QR_SIGNING_KEY)) in self.qr_verify_keys:
            raise ValueError("QR_VERIFY_KEYS lists the dev key outside dev: anyone could forge tickets")
        if bool(self.oidc_issuer_url) != bool(self.oidc_client_id):
            raise ValueError("OIDC_ISSUER_URL and OIDC_CLIENT_ID go together (the pages' provider and their client)")
        return self

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxies(cls, value: object) -> object:
        if isinstance(value, str):
            value = [p.strip() for p in value.split(",") if p.strip()]
        for proxy in value if isinstance(value, list) else []:
            ipaddress.ip_network(proxy, strict=False)  # ValueError: refused at start, not at the first request
        return value
