"""notifier settings: the only place that reads the environment."""

from __future__ import annotations

from pydantic import AliasChoices, Field, model_validator
from ticketing.settings import DEV_DEFAULT_SECRET, ServiceSettings

from notifier.domain.delivery import RetryPolicy

# A fixed 32-byte seed for dev runs only (base64); production refuses it through `secrets()`.
DEV_QR_SIGNING_KEY = "ZGV2LW9ubHktcXItc2lnbmluZy1rZXktY2hhbmdlISE="


class NotifierSettings(ServiceSettings):
    service_name: str = "notifier"
    database_url: str = Field(
        default="postgresql://postgres@127.0.0.1:5432/ticketing",
        validation_alias=AliasChoices("NOTIFIER_DATABASE_URL", "DATABASE_URL"),
    )
    db_pool_max: int = Field(default=5, ge=1)
    # A worker killed with -9 keeps its partitions until its session times out; faust's default (60 s)
    # would stall a restarted worker that long, so a shorter session (heartbeats every 3 s) is used.
    kafka_session_timeout_seconds: float = Field(default=10.0, ge=6)
    kafka_heartbeat_interval_seconds: float = Field(default=3.0, gt=0)
    # base64 of the 32-byte Ed25519 private seed; `python -m notifier.entrypoints.cli.tickets public-key` prints
    # the public key.
    qr_signing_key: str = DEV_QR_SIGNING_KEY
    smtp_host: str = "127.0.0.1"
    smtp_port: int = 1025
    smtp_timeout_seconds: float = Field(default=10.0, gt=0)
    # A real relay: STARTTLS (its certificate checked against SMTP_TLS_CAFILE, else the system's CAs), then
    # AUTH with these credentials when a username is set. The dev sink takes neither.
    smtp_starttls: bool = False
    smtp_tls_cafile: str = ""
    smtp_username: str = ""
    smtp_password: str = ""
    mail_from: str = "Cinema Tickets <tickets@cinema.example>"
    points_per_cents: int = Field(default=100, ge=1)  # 1 loyalty point per this many cents paid
    sender_interval_seconds: float = Field(default=1.0, gt=0)  # polling fallback of the e-mail sender
    sender_batch_size: int = Field(default=20, ge=1)
    # Per-e-mail retries of transient SMTP failures (domain/delivery.py): exponential from the base,
    # capped; FAILED after the attempts or the age bound. 30 attempts at 30 s doubling to 30 min span
    # about 12 h; a ticket e-mail still undelivered after a day needs an operator well before the show.
    email_retry_base_seconds: float = Field(default=30.0, gt=0)
    email_retry_max_delay_seconds: float = Field(default=1800.0, gt=0)
    email_max_attempts: int = Field(default=30, ge=1)
    email_max_age_seconds: float = Field(default=86400.0, gt=0)
    # While the SMTP server is unavailable the whole queue waits, from the sender interval doubling to this.
    email_max_pause_seconds: float = Field(default=60.0, gt=0)
    # faust writes a small folder per app id (no tables here: store is memory://); keep it under var/.
    faust_data_dir: str = "var/faust"
    http_host: str = "127.0.0.1"
    http_port: int = 8004

    @property
    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(base_seconds=self.email_retry_base_seconds,
                           max_delay_seconds=self.email_retry_max_delay_seconds,
                           max_attempts=self.email_max_attempts, max_age_seconds=self.email_max_age_seconds,
                           max_pause_seconds=self.email_max_pause_seconds)

    @property
    def consumer_name(self) -> str:
        """Kafka group id (= faust app id) and the inbox `consumer` column."""
        return f"{self.kafka_group_prefix}notifier"

    @model_validator(mode="after")
    def _credentials_only_over_tls(self) -> NotifierSettings:
        if self.smtp_username and not self.smtp_starttls and self.app_env != "dev":
            raise ValueError("SMTP_USERNAME needs SMTP_STARTTLS=true outside dev: credentials are not sent in clear")
        return self

    def secrets(self) -> dict[str, str]:
        key = DEV_DEFAULT_SECRET if self.qr_signing_key == DEV_QR_SIGNING_KEY else self.qr_signing_key
        return {**super().secrets(), "QR_SIGNING_KEY": key}
