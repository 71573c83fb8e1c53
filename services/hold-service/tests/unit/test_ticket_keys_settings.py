"""The ticket keys hold-service starts with: QR_VERIFY_KEYS read as a list of public keys, refused at start when
one is not a key, and the dev key refused outside dev (in either setting)."""

from __future__ import annotations

import pytest
from hold_service.config import HoldSettings
from hold_service.service_layer.ports import Deps
from pydantic import ValidationError
from ticketing.tickets import DEV_QR_SIGNING_KEY, TicketPayload, private_key_from_seed, public_key_text, sign_ticket

SEED = "bm90aWZpZXItdGVzdC1zZWVkLTMyLWJ5dGVzLWxvbmc="
OLD = private_key_from_seed("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=")
PRODUCTION = {"app_env": "production", "jwt_secret": "j" * 40, "_env_file": None}


@pytest.fixture(autouse=True)
def no_keys_in_the_environment(monkeypatch) -> None:
    """Settings read the environment too: a shell that sourced .env (QR_SIGNING_KEY) must not decide these."""
    for name in ("QR_SIGNING_KEY", "QR_VERIFY_KEYS", "APP_ENV"):
        monkeypatch.delenv(name, raising=False)


def test_retired_keys_are_a_comma_separated_list_the_keyring_verifies_with(monkeypatch) -> None:
    monkeypatch.setenv("QR_VERIFY_KEYS", f" {public_key_text(OLD)} , ")
    settings = HoldSettings(qr_signing_key=SEED, **PRODUCTION)
    assert settings.qr_verify_keys == [public_key_text(OLD)]
    ring = Deps(settings, None, None, None, None, None, None, None, None).tickets  # type: ignore[arg-type]
    payload = TicketPayload("b", 1, ("F1",))
    assert ring.verify(sign_ticket(payload, OLD)) == payload
    assert [k["x"] for k in ring.published()] == [public_key_text(private_key_from_seed(SEED)), public_key_text(OLD)]


def test_a_verify_key_that_is_not_a_key_is_refused_at_start() -> None:
    with pytest.raises(ValidationError, match="QR_VERIFY_KEYS"):
        HoldSettings(qr_signing_key=SEED, qr_verify_keys="not-a-key", **PRODUCTION)


def test_the_dev_ticket_key_is_refused_outside_dev() -> None:
    with pytest.raises(ValidationError, match="QR_SIGNING_KEY"):
        HoldSettings(**PRODUCTION)
    dev_public = public_key_text(private_key_from_seed(DEV_QR_SIGNING_KEY))
    with pytest.raises(ValidationError, match="QR_VERIFY_KEYS lists the dev key"):
        HoldSettings(qr_signing_key=SEED, qr_verify_keys=dev_public, **PRODUCTION)
    assert HoldSettings(app_env="dev", qr_verify_keys=dev_public, _env_file=None).qr_verify_keys == [dev_public]
