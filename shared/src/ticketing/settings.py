"""Validated settings shared by every service.

Each service subclasses `ServiceSettings`; nothing else in a service reads `os.environ`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ticketing.redis_client import cluster_nodes

# Secrets that ship in code for local runs; only dev mode (APP_ENV=dev, set by `make up` and the tests)
# runs with them.
DEV_DEFAULT_SECRET = "dev-only-change-me"
MIN_SECRET_LENGTH = 32


class KafkaSettings(BaseSettings):
    """How this deployment reaches Kafka and lays out its topics (docs/deployment.md, "Kafka").

    Every Kafka client of the process takes its security from here through `ticketing.kafka.client_options`;
    the defaults are the local broker: PLAINTEXT, one replica. Each setting's docstring is its meaning in the
    configuration reference (docs/configuration.md, generated from these classes).
    """

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=True,
                                      use_attribute_docstrings=True)

    kafka_bootstrap_servers: str = "127.0.0.1:9092"
    """The Kafka brokers to start from, host:port, comma-separated."""
    kafka_group_prefix: str = ""
    """Put before every consumer group and inbox name, so that a second stack (tests, a demo) runs its own
    groups on the same topics beside a running one."""
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    """How clients talk to the brokers; SASL_* needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD."""
    kafka_sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "SCRAM-SHA-512"
    """The SASL mechanism, with a SASL_* protocol."""
    kafka_sasl_username: str = ""
    """The SASL user, with a SASL_* protocol."""
    kafka_sasl_password: str = ""
    """The SASL user's password, with a SASL_* protocol (a secret)."""
    kafka_ssl_cafile: str = ""
    """PEM file of the CA that signed the brokers' certificates; empty: the system's trust store."""
    kafka_ssl_certfile: str = ""
    """PEM client certificate, for mutual TLS (with KAFKA_SSL_KEYFILE; Strimzi `tls` users)."""
    kafka_ssl_keyfile: str = ""
    """PEM private key of the client certificate, for mutual TLS."""
    kafka_ssl_check_hostname: bool = True
    """Whether a broker's certificate must name the host it was reached at."""
    kafka_topic_replication_factor: int = Field(default=1, ge=1)
    """Replicas of each topic created by `ticketing topics` (and the chart's topic Job); existing topics are
    left as they are."""
    kafka_topic_min_insync_replicas: int | None = Field(default=None, ge=1)
    """`min.insync.replicas` of the topics (set on existing ones too by `ticketing topics`); unset: the broker's
    default. At most the replication factor."""
    kafka_topic_retention_hours: int = Field(default=336, ge=1)
    """How long the event topics (booking-events, voucher-reserved) keep a message before the broker deletes it
    (cleanup.policy delete; 336: 14 days). Set by `ticketing topics` and the chart's topics Job on new and
    existing topics; a consumer group stopped for longer misses messages."""
    kafka_dlq_retention_hours: int = Field(default=720, ge=1)
    """How long a DLQ topic (booking-events.DLQ, voucher-reserved.DLQ) keeps a dead letter (720: 30 days), time
    to look at it and replay it (`ticketing dlq`); set like KAFKA_TOPIC_RETENTION_HOURS."""
    kafka_topic_partitions: dict[str, int] = Field(default_factory=dict)
    """Partitions of the topics created, a JSON object such as {"booking-events": 48}; a topic not named keeps
    the catalogue's count."""

    @model_validator(mode="after")
    def _sasl_needs_credentials(self) -> KafkaSettings:
        if self.kafka_security_protocol.startswith("SASL") and not (self.kafka_sasl_username and
                                                                    self.kafka_sasl_password):
            raise ValueError(f"KAFKA_SECURITY_PROTOCOL={self.kafka_security_protocol} needs "
                             "KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD")
        if (self.kafka_topic_min_insync_replicas or 0) > self.kafka_topic_replication_factor:
            raise ValueError("KAFKA_TOPIC_MIN_INSYNC_REPLICAS cannot exceed KAFKA_TOPIC_REPLICATION_FACTOR")
        return self


class ServiceSettings(KafkaSettings):
    app_env: Literal["dev", "test", "production"] = "production"
    """dev: default secrets are accepted (only `make up` and the tests set it); anything else, the default
    included: a default or short secret stops the service at start, so a deployment that forgets APP_ENV
    fails closed."""
    service_name: str = "ticketing"
    """The name in logs, metrics and traces (each service sets its own)."""
    log_level: str = "INFO"
    """DEBUG, INFO, WARNING or ERROR: the JSON logs on stdout."""
    redis_url: str = "redis://127.0.0.1:6379/0"
    """Redis: the seat gate, rate limits, the waiting room, the flash-sale gate (a cache: it may lose
    everything). With REDIS_CLUSTER_NODES it gives only the credentials and TLS."""
    redis_cluster_nodes: str = ""
    """host:port,... of a Redis Cluster: when set, every Redis use goes there through the cluster client."""
    database_url: str = "postgresql://postgres@127.0.0.1:5432/ticketing"
    """The service's PostgreSQL database (each service reads its own variable first: HOLD_DATABASE_URL and so
    on)."""
    db_pool_min: int = Field(default=2, ge=1)
    """Connections the service's pool keeps open."""
    db_pool_max: int = Field(default=20, ge=1)
    """Connections the service's pool opens at most (per process): pods x this is the database's budget."""
    dependency_timeout_seconds: float = Field(default=2.0, gt=0)
    """How long a call to a dependency (Redis, another service, a readiness probe) may take before it counts
    as failed; PostgreSQL statements get five times this."""
    max_body_bytes: int = Field(default=65536, ge=1)
    """A request body larger than this gets 413 PAYLOAD_TOO_LARGE before it is read whole."""
    max_header_bytes: int = Field(default=16384, ge=1024)
    """A request line and headers larger than this get 431 HEADERS_TOO_LARGE before they are parsed."""
    shed_max_in_flight: int = Field(default=64, ge=0)
    """Requests one API process works on at once before it sheds the rest with 503 UNAVAILABLE and
    Retry-After: seat-map reads, the catalogue and queue polls past half of it, holds past three quarters,
    gateway callbacks, checkouts and extensions past all of it (health, readiness and metrics never).
    Measured with make bench-overload (docs/operations.md, "Load shedding"); 0 turns shedding off."""
    shed_queue_timeout_ms: float = Field(default=5.0, ge=0)
    """How long a request past its share of SHED_MAX_IN_FLIGHT waits for a slot before its 503 (the most
    important waiter first), while fewer wait than SHED_MAX_IN_FLIGHT: it absorbs bursts near the limit.
    0: refused at once."""
    shed_retry_after_seconds: int = Field(default=1, ge=1)
    """The Retry-After of a shed request's 503."""
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    """Where a worker process serves /metrics (APIs serve it on their own port); unset: none."""
    metrics_host: str = "127.0.0.1"
    """The address a worker's /metrics listens on (0.0.0.0 in a container)."""
    access_log: bool = True
    """One log line per request (action=http.request), but for the hot paths' routine answers."""
    tracing_enabled: bool = False
    """OpenTelemetry traces; off, nothing of the SDK is even loaded."""
    tracing_exporter: Literal["otlp", "console", "none"] = "otlp"
    """otlp: protobuf over HTTP to OTEL_EXPORTER_OTLP_ENDPOINT; console: a JSON line per span on stdout; none:
    spans made and propagated, not exported."""
    otel_exporter_otlp_endpoint: str | None = None
    """The OTLP collector (/v1/traces is added); unset: OpenTelemetry's default, http://localhost:4318."""
    tracing_sample_ratio: float = Field(default=1.0, ge=0, le=1)
    """The share of traces that start here to record; a caller's decision (its `traceparent`) is kept."""

    @field_validator("redis_cluster_nodes")
    @classmethod
    def _nodes_are_host_port(cls, value: str) -> str:
        cluster_nodes(value)  # a malformed list fails at start-up, not at the first Redis call
        return value

    def secrets(self) -> dict[str, str]:
        """The secrets only dev mode may run with at their defaults; subclasses add theirs."""
        return {}

    @model_validator(mode="after")
    def _refuse_default_secrets_outside_dev(self) -> ServiceSettings:
        if self.app_env == "dev":
            return self
        weak = [name for name, value in self.secrets().items()
                if value == DEV_DEFAULT_SECRET or len(value) < MIN_SECRET_LENGTH]
        if weak:
            raise ValueError(f"APP_ENV={self.app_env} refuses default or short secrets: {', '.join(sorted(weak))} "
                             "(only APP_ENV=dev runs with them)")
        return self


class TokenSettings(ServiceSettings):
    """A service that verifies bearer tokens (ticketing.tokens): only these hold the key.

    JWT_SECRET signs and checks our own HS256 tokens (the services' calls to each other, dev tokens).
    JWT_JWKS_URL adds an identity provider's tokens (RS256, ES256, EdDSA), whose issuer and audience must
    be JWT_ISSUER and JWT_AUDIENCE."""

    jwt_secret: str = DEV_DEFAULT_SECRET
    """The HS256 key our own tokens are signed and checked with (a secret; at least 32 characters outside
    dev). Only the services that verify tokens hold it."""
    jwt_jwks_url: str = ""
    """An identity provider's JWKS (https outside dev): its RS256, ES256 and EdDSA tokens are accepted
    besides our own; empty: only our own HS256 tokens."""
    jwt_issuer: str = ""
    """The `iss` the identity provider's tokens must carry (required with JWT_JWKS_URL)."""
    jwt_audience: str = ""
    """The `aud` the identity provider's tokens must carry (required with JWT_JWKS_URL)."""
    jwt_jwks_cache_seconds: float = Field(default=600.0, gt=0)
    """How long the provider's keys are kept before they are read again (a token naming an unknown key has
    them read at once)."""
    jwt_jwks_refresh_cooldown_seconds: float = Field(default=30.0, ge=0)
    """The least time between two reads of the provider's keys, so that made-up key ids cannot make us
    hammer it."""
    jwt_roles_claim: str = "role"
    """Where a provider's token states its holder's roles: a claim name or a dotted path (Keycloak:
    realm_access.roles), holding a string or a list of strings (docs/sign-in.md)."""
    jwt_role_map: dict[str, str] = Field(default_factory=dict)
    """The provider's role names -> ours (customer, staff, admin), a JSON object such as
    {"cinema-staff": "staff"}; empty: the provider uses our names. Of several roles the strongest wins."""
    jwt_customer_id_claim: str = ""
    """A claim of the provider's tokens that carries our customer id (ASCII digits); empty: a numeric `sub` is
    the id, any other `sub` is mapped to an id of ours at its first sign-in (hold-service keeps the mapping)."""
    customer_ids_url: str = ""
    """hold-service's base URL, where this service asks for the customer id of a provider's subject (not
    hold-service itself, which keeps the mapping; payment-service: its HOLD_SERVICE_URL when empty); empty:
    provider tokens need a numeric `sub` or JWT_CUSTOMER_ID_CLAIM."""

    def secrets(self) -> dict[str, str]:
        return {**super().secrets(), "JWT_SECRET": self.jwt_secret}

    @model_validator(mode="after")
    def _provider_needs_issuer_and_audience(self) -> TokenSettings:
        if self.jwt_jwks_url and not (self.jwt_issuer and self.jwt_audience):
            raise ValueError("JWT_JWKS_URL needs JWT_ISSUER and JWT_AUDIENCE (the values the provider's "
                             "tokens must carry in iss and aud)")
        if self.jwt_jwks_url and self.app_env != "dev" and not self.jwt_jwks_url.startswith("https://"):
            raise ValueError("JWT_JWKS_URL must be https outside dev: whoever answers it decides which tokens pass")
        if wrong := sorted(set(self.jwt_role_map.values()) - {"customer", "staff", "admin"}):
            raise ValueError(f"JWT_ROLE_MAP maps to customer, staff or admin only, not {', '.join(wrong)}")
        return self


# The services an operator command can name, and the variable each service reads its database from.
SERVICE_DATABASES = {"hold": "HOLD_DATABASE_URL", "payment": "PAYMENT_DATABASE_URL",
                     "voucher": "VOUCHER_DATABASE_URL", "notifier": "NOTIFIER_DATABASE_URL"}


class OperatorSettings(BaseSettings):
    """What the operator commands (`ticketing outbox ...`) read: every service's database, from the same
    variables the services themselves read (each falls back to DATABASE_URL, as the services do)."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", use_attribute_docstrings=True)

    hold_database_url: str | None = Field(default=None,
                                          validation_alias=AliasChoices("HOLD_DATABASE_URL", "DATABASE_URL"))
    """hold-service's database, as hold-service reads it."""
    payment_database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("PAYMENT_DATABASE_URL", "DATABASE_URL"))
    """payment-service's database, as payment-service reads it."""
    voucher_database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("VOUCHER_DATABASE_URL", "DATABASE_URL"))
    """voucher-service's database, as voucher-service reads it."""
    notifier_database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("NOTIFIER_DATABASE_URL", "DATABASE_URL"))
    """The notifier's database, as the notifier reads it."""

    def database_url(self, service: str) -> str:
        url: str | None = getattr(self, f"{service}_database_url")
        if not url:
            raise ValueError(f"{SERVICE_DATABASES[service]} (or DATABASE_URL) is not set")
        return url
