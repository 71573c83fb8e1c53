"""notifier settings: the only place that reads the environment."""

from __future__ import annotations

from pydantic import AliasChoices, Field, model_validator
from ticketing.settings import DEV_DEFAULT_SECRET, ServiceSettings
from ticketing.tickets import DEV_QR_SIGNING_KEY


class NotifierSettings(ServiceSettings):
    """Each setting's docstring is its meaning in docs/configuration.md (generated from this class)."""

    service_name: str = "notifier"
    """The name in logs, metrics and traces."""
    database_url: str = Field(
        default="postgresql://postgres@127.0.0.1:5432/ticketing",
        validation_alias=AliasChoices("NOTIFIER_DATABASE_URL", "DATABASE_URL"),
    )
    """The notifier's database (its role sees only its own schema, `notifier`)."""
    db_pool_max: int = Field(default=5, ge=1)
    """Connections the notifier's pool opens at most."""
    kafka_session_timeout_seconds: float = Field(default=10.0, ge=6)
    """How long a worker killed with -9 keeps its partitions before another gets them (faust's own default,
    60 s, would stall a restarted worker that long)."""
    kafka_heartbeat_interval_seconds: float = Field(default=3.0, gt=0)
    """How often the worker tells the group coordinator it is alive (well under the session timeout)."""
    qr_signing_key: str = DEV_QR_SIGNING_KEY
    """base64 of the 32-byte Ed25519 private seed the tickets' QR codes are signed with (a secret), hold-service's
    too (its door verifies them); a ticket names it by id (a digest of its public key).
    `python -m notifier.entrypoints.cli.tickets public-key` prints the public key scanners verify with; after a
    rotation that key of the old seed goes into hold-service's QR_VERIFY_KEYS, so tickets already sent admit."""
    smtp_host: str = "127.0.0.1"
    """The SMTP server e-mail goes to (make up: the dev sink)."""
    smtp_port: int = 1025
    """The SMTP server's port."""
    smtp_timeout_seconds: float = Field(default=10.0, gt=0)
    """How long one SMTP conversation may take."""
    smtp_starttls: bool = False
    """Whether to upgrade the SMTP connection with STARTTLS before anything else (a real relay); its
    certificate is checked against SMTP_TLS_CAFILE, else the system's CAs."""
    smtp_tls_cafile: str = ""
    """PEM file of the CA that signed the relay's certificate; empty: the system's trust store."""
    smtp_username: str = ""
    """The relay's AUTH user; empty: no AUTH (the dev sink). Outside dev it needs SMTP_STARTTLS."""
    smtp_password: str = ""
    """The relay's AUTH password (a secret)."""
    mail_from: str = "Cinema Tickets <tickets@cinema.example>"
    """The From of every e-mail."""
    points_per_cents: int = Field(default=100, ge=1)
    """One loyalty point per this many cents paid."""
    currency: str = Field(default="EUR", pattern="^[A-Z]{3}$")
    """The ISO 4217 code of the currency the amounts of the events are in (cents of it), as e-mails show
    them in each customer's locale."""
    sender_interval_seconds: float = Field(default=1.0, gt=0)
    """How often the e-mail sender looks for e-mails to send when nothing woke it."""
    sender_batch_size: int = Field(default=20, ge=1)
    """E-mails the sender claims at once."""
    email_retry_base_seconds: float = Field(default=30.0, gt=0)
    """The first wait before an e-mail refused for a passing reason is tried again; it doubles each time."""
    email_retry_max_delay_seconds: float = Field(default=1800.0, gt=0)
    """The longest wait between two tries of one e-mail."""
    email_max_attempts: int = Field(default=30, ge=1)
    """Tries of one e-mail before it is marked FAILED (30 tries from 30 s doubling to 30 min span about 12 h)."""
    email_max_age_seconds: float = Field(default=86400.0, gt=0)
    """An e-mail still unsent this long after it was queued is marked FAILED: it needs an operator well before
    the show."""
    email_max_pause_seconds: float = Field(default=60.0, gt=0)
    """While the SMTP server is unavailable the whole queue waits, from the sender interval doubling up to
    this."""
    contacts_url: str = ""
    """hold-service's base URL, where the notifier reads the buyer's contact of a booking (GET
    /buyer-contacts/{bookingId}) when the directory has no address for him; empty: the directory only."""
    contacts_api_key: str = ""
    """The key sent to hold-service for buyer contacts (X-Api-Key; hold-service's CONTACTS_API_KEY; a secret)."""
    faust_data_dir: str = "var/faust"
    """The small folder faust writes per app id (no tables here: its store is memory://)."""
    http_host: str = "127.0.0.1"
    """The address the worker's pages (/healthz, /readyz, /metrics) listen on."""
    http_port: int = 8004
    """The port of the worker's pages."""

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
        contacts = {"CONTACTS_API_KEY": self.contacts_api_key} if self.contacts_url else {}
        return {**super().secrets(), "QR_SIGNING_KEY": key, **contacts}
