"""The mailer against a relay that wants what real ones want (aiosmtpd here): STARTTLS with its certificate
(self-signed, made for the test and trusted through SMTP_TLS_CAFILE), then AUTH. Delivered with the settings;
without STARTTLS, with a wrong password, without credentials or against a certificate nobody trusts, nothing
is sent and the failure is the relay's (UNAVAILABLE: the queue waits), never the message's."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from notifier.adapters.mailer import SmtpMailer
from notifier.bootstrap import smtp_login
from notifier.config import NotifierSettings
from notifier.domain.delivery import DeliveryError, Failure
from notifier.domain.rendering import RenderedEmail
from ticketing_testing import free_port

USER, PASSWORD = "ticketing", "relay-password-" + "p" * 20


def self_signed(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "relay.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "relay.pem", folder / "relay.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class Relay:
    def __init__(self) -> None:
        self.delivered: list[tuple[str, list[str], bytes]] = []
        self.logins: list[str] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.delivered.append((envelope.mail_from, envelope.rcpt_tos, envelope.content))
        return "250 OK"

    def authenticate(self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        ok = isinstance(data, LoginPassword) and (data.login, data.password) == (USER.encode(), PASSWORD.encode())
        if ok:
            self.logins.append(USER)
        return AuthResult(success=ok)


@pytest.fixture
def relay(tmp_path: Path) -> Iterator[tuple[Relay, int, Path]]:
    cert, key = self_signed(tmp_path)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    handler, port = Relay(), free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port, tls_context=tls, require_starttls=True,
                            auth_required=True, auth_require_tls=True, authenticator=handler.authenticate)
    controller.start()
    yield handler, port, cert
    controller.stop()


def mailer(port: int, **settings: Any) -> SmtpMailer:
    s = NotifierSettings(app_env="dev", smtp_host="127.0.0.1", smtp_port=port, _env_file=None, **settings)
    return SmtpMailer(s.smtp_host, s.smtp_port, "tickets@cinema.example", 5.0, smtp_login(s))


EMAIL = RenderedEmail("ana@example.com", b"From: tickets@cinema.example\r\nTo: ana@example.com\r\n"
                                         b"Subject: Your tickets\r\n\r\nEnjoy the film.\r\n")


async def test_delivered_through_starttls_and_auth(relay: tuple[Relay, int, Path]) -> None:
    handler, port, cert = relay
    await mailer(port, smtp_starttls=True, smtp_tls_cafile=str(cert), smtp_username=USER,
                 smtp_password=PASSWORD).send(EMAIL)
    assert handler.logins == [USER]
    [(sender, recipients, content)] = handler.delivered
    assert (sender, recipients) == ("tickets@cinema.example", ["ana@example.com"]) and b"Enjoy the film." in content


@pytest.mark.parametrize("settings", [
    {"smtp_username": USER, "smtp_password": PASSWORD},  # no STARTTLS: the relay refuses AUTH in clear
    {"smtp_starttls": True, "smtp_username": USER, "smtp_password": "wrong"},
    {"smtp_starttls": True},  # no credentials: MAIL refused until AUTH (530)
    {"smtp_starttls": True, "smtp_username": USER, "smtp_password": PASSWORD, "trusted": False},
], ids=["no-starttls", "wrong-password", "no-credentials", "untrusted-certificate"])
async def test_a_relay_that_refuses_us_keeps_the_message_queued(relay: tuple[Relay, int, Path],
                                                                settings: dict[str, Any]) -> None:
    handler, port, cert = relay
    trusted = settings.pop("trusted", True)
    if settings.get("smtp_starttls") and trusted:
        settings["smtp_tls_cafile"] = str(cert)
    with pytest.raises(DeliveryError) as failed:
        await mailer(port, **settings).send(EMAIL)
    assert failed.value.failure is Failure.UNAVAILABLE, failed.value.detail
    assert handler.delivered == []


def test_credentials_are_never_configured_to_go_in_clear() -> None:
    with pytest.raises(ValueError, match="SMTP_STARTTLS"):
        NotifierSettings(app_env="production", qr_signing_key="q" * 44, smtp_username=USER, _env_file=None)
    settings = NotifierSettings(app_env="production", qr_signing_key="q" * 44, smtp_username=USER,
                                smtp_starttls=True, _env_file=None)
    assert "jwt_secret" not in type(settings).model_fields  # the notifier verifies no token: it holds no key
