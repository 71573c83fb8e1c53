"""Validated settings shared by every service.

Each service subclasses `ServiceSettings`; nothing else in a service reads `os.environ`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ticketing.redis_client import cluster_nodes

# Secrets that ship in code for local runs; production mode refuses them.
DEV_DEFAULT_SECRET = "dev-only-change-me"
MIN_SECRET_LENGTH = 32


class KafkaSettings(BaseSettings):
    """How this deployment reaches Kafka and lays out its topics (deploy/README.md, "Kafka").

    Every Kafka client of the process takes its security from here through `ticketing.kafka.client_options`;
    the defaults are the local broker: PLAINTEXT, one replica.
    """

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=True)

    kafka_bootstrap_servers: str = "127.0.0.1:9092"
    # Prefixes consumer group and inbox names, so tests run their own groups beside a running dev stack.
    kafka_group_prefix: str = ""
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    kafka_sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "SCRAM-SHA-512"
    kafka_sasl_username: str = ""
    kafka_sasl_password: str = ""
    # PEM files. No CA file: the system's trust store. Client certificate + key: mutual TLS (Strimzi `tls` users).
    kafka_ssl_cafile: str = ""
    kafka_ssl_certfile: str = ""
    kafka_ssl_keyfile: str = ""
    kafka_ssl_check_hostname: bool = True
    # Topic layout used when topics are created (`ticketing topics`, the chart's topic Job); existing topics
    # are left as they are. Partitions: JSON object, e.g. {"booking-events": 48}; others keep the catalogue's.
    kafka_topic_replication_factor: int = Field(default=1, ge=1)
    kafka_topic_min_insync_replicas: int | None = Field(default=None, ge=1)
    kafka_topic_partitions: dict[str, int] = Field(default_factory=dict)

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
    app_env: Literal["dev", "test", "production"] = "dev"
    service_name: str = "ticketing"
    log_level: str = "INFO"
    jwt_secret: str = DEV_DEFAULT_SECRET
    redis_url: str = "redis://127.0.0.1:6379/0"
    # host:port,... of a Redis Cluster: every Redis use goes there (ticketing.redis_client); REDIS_URL then
    # gives only the credentials and TLS.
    redis_cluster_nodes: str = ""
    database_url: str = "postgresql://postgres@127.0.0.1:5432/ticketing"
    db_pool_min: int = Field(default=2, ge=1)
    db_pool_max: int = Field(default=20, ge=1)
    dependency_timeout_seconds: float = Field(default=2.0, gt=0)
    # A request body over this gets 413 PAYLOAD_TOO_LARGE before it is read whole (ticketing.api.body_limit).
    max_body_bytes: int = Field(default=65536, ge=1)
    # A worker process serves /metrics on this port when set (README, "Metrics"); APIs serve it themselves.
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    metrics_host: str = "127.0.0.1"
    # One log line per request (action=http.request), but for the hot paths' routine answers.
    access_log: bool = True
    # OpenTelemetry traces (ticketing.tracing, README "Operating it"); off, nothing of the SDK is loaded.
    # otlp: protobuf over HTTP to OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces (as OpenTelemetry names and reads it;
    # unset: OpenTelemetry's own default, a collector beside the process on localhost:4318); console: a JSON
    # line per span on stdout; none: spans made and propagated, not exported.
    tracing_enabled: bool = False
    tracing_exporter: Literal["otlp", "console", "none"] = "otlp"
    otel_exporter_otlp_endpoint: str | None = None
    # Of the traces that start here (a request without a sampled `traceparent`); a caller's decision is kept.
    tracing_sample_ratio: float = Field(default=1.0, ge=0, le=1)

    @field_validator("redis_cluster_nodes")
    @classmethod
    def _nodes_are_host_port(cls, value: str) -> str:
        cluster_nodes(value)  # a malformed list fails at start-up, not at the first Redis call
        return value

    def secrets(self) -> dict[str, str]:
        """The secrets production mode must not run with; subclasses add theirs."""
        return {"JWT_SECRET": self.jwt_secret}

    @model_validator(mode="after")
    def _refuse_default_secrets_in_production(self) -> ServiceSettings:
        if self.app_env != "production":
            return self
        weak = [name for name, value in self.secrets().items()
                if value == DEV_DEFAULT_SECRET or len(value) < MIN_SECRET_LENGTH]
        if weak:
            raise ValueError(f"production mode refuses default or short secrets: {', '.join(sorted(weak))}")
        return self


# The services an operator command can name, and the variable each service reads its database from.
SERVICE_DATABASES = {"hold": "HOLD_DATABASE_URL", "payment": "PAYMENT_DATABASE_URL",
                     "voucher": "VOUCHER_DATABASE_URL", "notifier": "NOTIFIER_DATABASE_URL"}


class OperatorSettings(BaseSettings):
    """What the operator commands (`ticketing outbox ...`) read: every service's database, from the same
    variables the services themselves read (each falls back to DATABASE_URL, as the services do)."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    hold_database_url: str | None = Field(default=None,
                                          validation_alias=AliasChoices("HOLD_DATABASE_URL", "DATABASE_URL"))
    payment_database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("PAYMENT_DATABASE_URL", "DATABASE_URL"))
    voucher_database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("VOUCHER_DATABASE_URL", "DATABASE_URL"))
    notifier_database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("NOTIFIER_DATABASE_URL", "DATABASE_URL"))

    def database_url(self, service: str) -> str:
        url: str | None = getattr(self, f"{service}_database_url")
        if not url:
            raise ValueError(f"{SERVICE_DATABASES[service]} (or DATABASE_URL) is not set")
        return url
